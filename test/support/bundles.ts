import { createRequire } from 'node:module';
import { resolve } from 'node:path';

/**
 * The programs the tests start as child processes (the `turnchart` command line, the crash host, the
 * small embedders), each bundled into one file with its dependencies (native `better-sqlite3` left
 * out). Started through `node --import tsx` a process takes 2–5 s to come up on a 2-core machine,
 * most of it resolving and compiling hundreds of modules; bundled, about 0.5 s, and the suites start
 * a few hundred. The bundles are made from the sources at the start of every run (a vitest global
 * setup), so they never lag behind them as a `dist/` build could. esbuild is the one tsx itself
 * transpiles with, reached through tsx.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const OUT = resolve(ROOT, '.turnchart/test-bundles');
const DIRECTORY_VARIABLE = 'TURNCHART_TEST_BUNDLES';

const ENTRIES = {
  cli: 'src/cli/main.ts',
  'crash-host': 'test/reliability/crash-host.ts',
  'forgetful-embedder': 'test/support/forgetful-embedder.ts',
  'subagent-host': 'test/support/subagent-host.ts',
  'chaos-worker': 'test/support/chaos-worker.ts',
  'command-host': 'test/support/command-host.ts',
  'probe-containment': 'test/support/probe-containment.ts',
  'mcp-fixture-server': 'test/support/mcp-fixture-server.ts',
} as const;

export type BundleName = keyof typeof ENTRIES;

type Esbuild = typeof import('esbuild');

/** Vitest global setup (main process): bundles every entry and tells the workers where they are. */
export default async function bundleEntries(): Promise<void> {
  const tsx = createRequire(import.meta.url).resolve('tsx');
  const esbuild = createRequire(tsx)('esbuild') as Esbuild;
  const started = performance.now();
  await esbuild.build({
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, source]) => [name, resolve(ROOT, source)])),
    outdir: OUT,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    // The entries share most of their code: one copy of it, in chunks they import.
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // tsx loads a `turnchart.config.ts` at run time through its module hooks, which find their own files: never bundled.
    external: ['better-sqlite3', 'pg-native', 'tsx'],
    // Bundled CommonJS dependencies call `require` (for Node's built-ins); an ES module has none of its own.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  process.env[DIRECTORY_VARIABLE] = OUT;
  console.log(`test programs: bundled ${Object.keys(ENTRIES).length} entries in ${Math.round(performance.now() - started)} ms`);
}

/** The bundled file to hand to `node` for one program. */
export function bundled(name: BundleName): string {
  const dir = process.env[DIRECTORY_VARIABLE];
  if (!dir) throw new Error(`${DIRECTORY_VARIABLE} is not set: run the tests through vitest, whose global setup bundles the programs`);
  return resolve(dir, `${name}.mjs`);
}
