import { describe, expect, it } from 'vitest';
import { runChaos } from '../support/chaos-run.js';
import { TASK_SUITE_SKIP } from '../support/task-stack.js';

if (TASK_SUITE_SKIP) console.log(`Task chaos suite skipped: ${TASK_SUITE_SKIP}`);

const SEED = Number(process.env.TURNCHART_CHAOS_SEED ?? Date.now() % 1_000_000);

/** The small chaos run of `npm test`; test/reliability/task-chaos.test.ts is the full one. */
describe.skipIf(TASK_SUITE_SKIP !== null)('workers SIGKILLed while they run tasks (small)', () => {
  it('2 workers, 10 tasks, 2 kills: one terminal state each, every consumer gap- and duplicate-free, no tool run twice', async () => {
    console.log(`task chaos seed ${SEED} (replay: TURNCHART_CHAOS_SEED=${SEED})`);
    const report = await runChaos({ workers: 2, tasks: 10, kills: 2, seed: SEED, concurrency: 4, deadlineMs: 90_000 });
    console.log(`task chaos: ${JSON.stringify({ ...report, problems: report.problems.length })}`);
    expect(report.problems).toEqual([]);
    expect(report.recovered).toBeGreaterThan(0);
  }, 180_000);
});
