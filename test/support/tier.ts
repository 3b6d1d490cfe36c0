/**
 * Which tier of the suite this run is. `npm test` is the quick tier a newcomer waits for (SQLite,
 * fixed seeds, small counts); `npm run test:full` (vitest.full.config.ts) sets TURNCHART_TEST_TIER
 * to `full` and adds the slow matrices: the PostgreSQL twin of every durable scenario, the generated
 * chart paths, the seeded schedules at full count and the task chaos run.
 */
export const FULL_TIER = process.env.TURNCHART_TEST_TIER === 'full';
