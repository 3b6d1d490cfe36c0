import fc from 'fast-check';
import type { SessionStorage } from '../../src/index.js';
import { seedOf, SEED_VARIABLES } from '../support/reliability-seeds.js';
import { tally } from '../support/reliability-tally.js';
import { runSchedule, scheduleArbitrary } from '../support/schedule-property.js';
import { messageOf } from '../../src/protocol/error-message.js';

/** Replays one failing schedule: fast-check goes straight to the counterexample at this path. */
const PATH_VARIABLE = 'TURNCHART_SCHEDULE_PATH';

export interface ScheduleRuns {
  dialect: string;
  /** Which shard of the dialect's schedules this is (from 1), of how many. */
  shard: number;
  shards: number;
  numRuns: number;
  /** The test file, for the replay command. */
  file: string;
  /** A fresh storage for one schedule (its runtime closes it). */
  open: () => Promise<SessionStorage>;
}

/**
 * Runs `numRuns` random schedules (`schedule-property.ts`), drawn with the run's schedule seed plus
 * the shard's offset, and prints the seed first. A failure throws fast-check's report (seed, path,
 * shrunk counterexample) and the command that replays exactly that schedule.
 */
export async function checkSchedules({ dialect, shard, shards, numRuns, file, open }: ScheduleRuns): Promise<void> {
  const base = seedOf('schedules');
  const seed = base + shard - 1;
  const path = process.env[PATH_VARIABLE];
  const name = `schedules on ${dialect} (shard ${shard} of ${shards})`;
  console.log(`${name}: ${numRuns} runs, fast-check seed ${seed} (${SEED_VARIABLES.schedules}=${base})${path ? `, replaying path ${path}` : ''}`);
  const reach = { withTurns: 0, turns: 0, faultsFired: 0 };
  const started = performance.now();
  const property = fc.asyncProperty(scheduleArbitrary, async (schedule) => {
    const { turns, faultFired } = await runSchedule(schedule, await open());
    reach.withTurns += turns > 0 ? 1 : 0;
    reach.turns += turns;
    reach.faultsFired += faultFired ? 1 : 0;
  });
  const details = await fc.check(property, { seed, numRuns, ...(path && { path }) });
  if (details.failed) throw failure(details, `${SEED_VARIABLES.schedules}=${base}`, file);
  tally(`schedules on ${dialect}`, details.numRuns);
  const ms = (performance.now() - started) / details.numRuns;
  console.log(
    `${name}: ${details.numRuns} passed in ${((ms * details.numRuns) / 1000).toFixed(0)} s (${ms.toFixed(1)} ms each); ` +
      `${reach.withTurns} started a turn (${reach.turns} turns in all), ${reach.faultsFired} had their storage fault fire`,
  );
}

/** fast-check's report, the assertion that failed, and the command that replays that schedule alone. */
function failure<Ts>(details: fc.RunDetails<Ts>, seedSetting: string, file: string): Error {
  const replay = `${seedSetting} ${PATH_VARIABLE}=${details.counterexamplePath} npx vitest run --config vitest.reliability.config.ts ${file}`;
  const cause = details.errorInstance;
  const what = messageOf(cause);
  return new Error(`${fc.defaultReportMessage(details)}\n\nWhat failed: ${what}\n\nReplay this schedule: ${replay}`, { cause });
}
