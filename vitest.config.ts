import { defineConfig } from 'vitest/config';

/**
 * `npm test`: the quick tier (test/support/tier.ts). The slow matrices run in `npm run test:full`
 * (vitest.full.config.ts): the generated chart paths and the task chaos run are left out here, and
 * the PostgreSQL twins and full seeded counts are switched off by the tier.
 */
const SLOW_ONLY = ['test/paths/chart-paths.test.ts', 'test/tasks/task-chaos.test.ts'];

/**
 * Files that replace a module for their own run (`vi.mock`): they need a module registry of their
 * own. Every other file shares its worker's registry with the files before it, so the runtime's few
 * hundred modules are loaded once per worker rather than once per file: that was more than half of
 * the suite's time on a 2-core machine (import 237 s of a 328 s run over test/runtime, context,
 * tools, storage and machines; 19 s of 130 s shared).
 */
export const OWN_MODULES = ['test/runtime/loop/prepare-once.test.ts'];

export function suiteConfig(options: { exclude: string[]; env?: Record<string, string>; report: string }) {
  // What each project runs with. The projects do not extend the root: that would run the global
  // setup once more per project.
  const project = (name: string, include: string[], exclude: string[], isolate: boolean) => ({
    // The examples import the package by name, as a host would; in tests that name is the source.
    resolve: { alias: { turnchart: new URL('./src/index.ts', import.meta.url).pathname } },
    test: { name, include, exclude, isolate, testTimeout: 20_000, hookTimeout: 30_000, ...(options.env ? { env: options.env } : {}) },
  });
  return defineConfig({
    test: {
      globalSetup: ['test/support/postgres-probe.ts', 'test/support/rabbitmq-probe.ts', 'test/support/bundles.ts'],
      // Vitest's default is one worker per core but one: a single worker on a 2-core machine. Much of
      // the suite waits (on child processes, loopback HTTP, PostgreSQL), so two files at a time.
      maxWorkers: 2,
      reporters: ['default', 'json'],
      outputFile: { json: options.report },
      projects: [
        project('shared', ['test/**/*.test.ts'], [...options.exclude, ...OWN_MODULES], false),
        project('own-modules', OWN_MODULES, options.exclude, true),
      ],
    },
  });
}

export default suiteConfig({ exclude: ['test/reliability/**', 'node_modules/**', ...SLOW_ONLY], report: '.turnchart/test-results.json' });
