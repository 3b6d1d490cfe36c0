import { createRequire } from 'node:module';
import { resolve } from 'node:path';

/**
 * The crash harness starts a host process for every kill, a few hundred per run. Started through
 * `node --import tsx` a host takes about 2 s to come up, most of it resolving and compiling the
 * hundreds of modules of its dependencies; bundled into one file (dependencies included, native
 * `better-sqlite3` left out) it takes about 0.5 s. The bundle is made from the sources at the start
 * of every run, so it never lags behind them (a host built from `dist/` would run whatever was last
 * built). esbuild is the one tsx itself transpiles with, reached through tsx.
 */
const SOURCE = resolve(import.meta.dirname, '../reliability/crash-host.ts');
const BUNDLE = resolve(import.meta.dirname, '../../.turnchart/crash-host/crash-host.mjs');
const BUNDLE_VARIABLE = 'TURNCHART_CRASH_HOST_BUNDLE';

type Esbuild = typeof import('esbuild');

/** Vitest global setup (main process): bundles the host and tells the workers where it is. */
export async function bundleCrashHost(): Promise<void> {
  const tsx = createRequire(import.meta.url).resolve('tsx');
  const esbuild = createRequire(tsx)('esbuild') as Esbuild;
  const started = performance.now();
  await esbuild.build({
    entryPoints: [SOURCE],
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['better-sqlite3', 'pg-native'],
    // Bundled CommonJS dependencies call `require` (for Node's built-ins); an ES module has none of its own.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  process.env[BUNDLE_VARIABLE] = BUNDLE;
  console.log(`crash host: bundled ${SOURCE} in ${Math.round(performance.now() - started)} ms`);
}

/** The arguments to `node` that start one host on `target`. */
export function crashHostArgs(target: object): string[] {
  const bundle = process.env[BUNDLE_VARIABLE];
  if (!bundle) throw new Error(`${BUNDLE_VARIABLE} is not set: run through vitest.reliability.config.ts`);
  return [bundle, JSON.stringify(target)];
}
