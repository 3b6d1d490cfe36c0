import { describe, expect, it } from 'vitest';
import { runChaos } from '../support/chaos-run.js';
import { TASK_SUITE_SKIP } from '../support/task-stack.js';

if (TASK_SUITE_SKIP) console.log(`Task chaos suite skipped: ${TASK_SUITE_SKIP}`);

const SEED = Number(process.env.TURNCHART_CHAOS_SEED ?? Date.now() % 1_000_000);

/**
 * The full chaos run: 3 worker processes take 100 tasks while 8 of them, chosen and timed by the
 * seed, are SIGKILLed and replaced; one event consumer restarts along the way. Replay a run with
 * TURNCHART_CHAOS_SEED.
 */
describe.skipIf(TASK_SUITE_SKIP !== null)('workers SIGKILLed while they run tasks', () => {
  it('3 workers, 100 tasks, 8 kills: one terminal state each, every consumer gap- and duplicate-free, no tool run twice', async () => {
    console.log(`task chaos seed ${SEED} (replay: TURNCHART_CHAOS_SEED=${SEED})`);
    const report = await runChaos({ workers: 3, tasks: 100, kills: 8, seed: SEED, concurrency: 6, deadlineMs: 180_000 });
    console.log(`task chaos: ${JSON.stringify({ ...report, problems: report.problems.length })}`);
    expect(report.problems.slice(0, 20)).toEqual([]);
    expect(report.recovered).toBeGreaterThan(0);
  // Eleven worker starts, the 180 s wait for every task and 60 s for the consumers, on a loaded machine.
  }, 420_000);
});
