import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The examples import the package by name, as a host would; in tests that name is the source.
  resolve: { alias: { turnchart: new URL('./src/index.ts', import.meta.url).pathname } },
  test: {
    globalSetup: ['test/support/postgres-probe.ts', 'test/support/rabbitmq-probe.ts'],
    include: ['test/**/*.test.ts'],
    exclude: ['test/reliability/**', 'node_modules/**'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    reporters: ['default', 'json'],
    outputFile: { json: '.turnchart/test-results.json' },
  },
});
