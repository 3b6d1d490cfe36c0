import { suiteConfig } from './vitest.config.js';

/**
 * `npm run test:full`: every suite of `npm test` plus the slow matrices (test/support/tier.ts): the
 * PostgreSQL twin of every durable scenario, the generated chart paths, the seeded schedules at
 * full count and the task chaos run. The crash harness and load stay in `npm run test:reliability`.
 */
export default suiteConfig({
  exclude: ['test/reliability/**', 'node_modules/**'],
  env: { TURNCHART_TEST_TIER: 'full' },
  report: '.turnchart/full-results.json',
});
