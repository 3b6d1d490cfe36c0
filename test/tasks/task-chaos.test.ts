import { describe, expect, it } from 'vitest';
import { runChaos } from '../support/chaos-run.js';
import { TASK_SUITE_SKIP } from '../support/task-stack.js';

if (TASK_SUITE_SKIP) console.log(`Task chaos suite skipped: ${TASK_SUITE_SKIP}`);

// Fixed, as every property of `npm test` is; the reliability run draws a new one each time.
const SEED = Number(process.env.TURNCHART_CHAOS_SEED ?? 96_093);

/** The small chaos run of `npm test`; test/reliability/task-chaos.test.ts is the full one. */
describe.skipIf(TASK_SUITE_SKIP !== null)('workers SIGKILLed while they run tasks (small)', () => {
  it('2 workers, 10 tasks, 2 kills: one terminal state each, every consumer gap- and duplicate-free, no tool run twice', async () => {
    console.log(`task chaos seed ${SEED} (replay: TURNCHART_CHAOS_SEED=${SEED})`);
    const report = await runChaos({ workers: 2, tasks: 10, kills: 2, seed: SEED, concurrency: 4, deadlineMs: 90_000 });
    console.log(`task chaos: ${JSON.stringify({ ...report, problems: report.problems.length })}`);
    expect(report.problems).toEqual([]);
    expect(report.kills).toBe(2);
    // At this size whether a kill leaves anything to recover depends on timing (a CI run with 2 kills
    // and seed 594012 recovered none, with no problem found); the full run asserts recoveries.
  }, 180_000);
});
