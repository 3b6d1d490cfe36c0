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
    // The problems include any task a kill interrupted that no worker recovered after it.
    expect(report.problems).toEqual([]);
    expect(report.kills).toBe(2);
    // Every task a kill caught RUNNING, PAUSED or ABORTING was recovered, so there are at least as many
    // recoveries. Whether a kill catches any depends on timing at this size (a CI run with 2 kills and
    // seed 594012 caught none); the full run asserts that recoveries happen.
    expect(report.recovered).toBeGreaterThanOrEqual(report.interrupted);
  }, 180_000);
});
