import { defineConfig } from 'vitest/config';

/** `npm run test:reliability`: the slow suites (load; the crash harness to come), kept out of `npm test`. */
export default defineConfig({
  resolve: { alias: { turnchart: new URL('./src/index.ts', import.meta.url).pathname } },
  test: {
    globalSetup: ['test/support/postgres-probe.ts'],
    include: ['test/reliability/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    reporters: ['default', 'json'],
    outputFile: { json: '.turnchart/reliability-results.json' },
  },
});
