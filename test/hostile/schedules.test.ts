import fc from 'fast-check';
import { describe, it } from 'vitest';
import { sqliteStorage } from '../../src/index.js';
import { POSTGRES_TWINS, POSTGRES_URL, postgresSchema } from '../support/databases.js';
import { runSchedule, scheduleArbitrary } from '../support/schedule-property.js';
import { FULL_TIER } from '../support/tier.js';

/**
 * Issue 4, item 3, in its quick size: random interleavings of commands against random model
 * scripts and random storage faults, with every invariant checked (`test/support/schedule-property.ts`).
 * The reliability suite runs the same property 10 000 times on SQLite and 1 000 on PostgreSQL, from a
 * fresh seed each run; here the seed is fixed so the run is deterministic: 300 runs in `npm test`,
 * 1 000 (and 100 on PostgreSQL) in `npm run test:full`.
 */
const SEED = 4242;
const SQLITE_RUNS = FULL_TIER ? 1_000 : 300;

describe('random command schedules (issue 4, item 3)', () => {
  it(`keep every invariant over ${SQLITE_RUNS} seeded runs on SQLite`, async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary, async (schedule) => {
        await runSchedule(schedule, sqliteStorage({ filename: ':memory:' }));
      }),
      { seed: SEED, numRuns: SQLITE_RUNS },
    );
  }, 300_000);

  it.runIf(POSTGRES_TWINS)('keep every invariant over 100 seeded runs on PostgreSQL', async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArbitrary, async (schedule) => {
        const db = postgresSchema(POSTGRES_URL!);
        try {
          await runSchedule(schedule, db.open());
        } finally {
          await db.drop();
        }
      }),
      { seed: SEED, numRuns: 100 },
    );
  }, 300_000);
});
