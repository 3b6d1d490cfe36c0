import { defineConfig } from 'vitest/config';

/** `npm run test:reliability`: the slow suites (crash harness, schedules at full count, fault injection, load), kept out of `npm test`. */
export default defineConfig({
  resolve: { alias: { turnchart: new URL('./src/index.ts', import.meta.url).pathname } },
  test: {
    globalSetup: ['test/support/postgres-probe.ts', 'test/support/rabbitmq-probe.ts', 'test/support/reliability-setup.ts'],
    include: ['test/reliability/**/*.test.ts'],
    // Part of the full tier: the hostile suites at full size run on both dialects (test/support/tier.ts).
    env: { TURNCHART_TEST_TIER: 'full' },
    // Vitest's default here is one worker per core but one. Much of this suite waits rather than
    // computes — on PostgreSQL's commits, on host processes starting — so three files at a time keep
    // two cores busy.
    maxWorkers: 3,
    testTimeout: 300_000,
    hookTimeout: 60_000,
    reporters: ['default', 'json'],
    outputFile: { json: '.turnchart/reliability-results.json' },
  },
});
