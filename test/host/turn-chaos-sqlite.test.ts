import { describe, expect, it } from 'vitest';
import { runTurnChaos } from '../support/turn-chaos.js';

/** The quick tier's seed is fixed, so `npm test` is the same run every time; TURNCHART_TURN_CHAOS_SEED picks another. */
const SEED = Number(process.env.TURNCHART_TURN_CHAOS_SEED ?? 26);

/**
 * Issue 26's chaos on one machine: one `turnchart serve` on a SQLite file, SIGKILLed four times at
 * drawn moments and started again on the same file (a restart, not a move), under 16 interactive
 * sessions whose turns run tool steps and wait for approvals. The same checks as the cluster run in
 * `npm run test:reliability` (test/reliability/turn-chaos.test.ts), at a small size.
 */
describe('a SQLite host SIGKILLed and restarted under interactive turns (issue 26)', () => {
  it('16 sessions, 4 kills: every turn completes, no tool runs twice, no approval is lost, every stream gap-free', async () => {
    console.log(`turn chaos (sqlite) seed ${SEED} (replay: TURNCHART_TURN_CHAOS_SEED=${SEED})`);
    const report = await runTurnChaos({
      seed: SEED,
      deployment: { kind: 'sqlite' },
      leaseTtl: 2,
      sessions: 16,
      turnsPerSession: [1, 3],
      startSpreadMs: 5_000,
      kills: 4,
      killGapMs: [1_000, 2_500],
      approvalShare: 1 / 3,
      denyShare: 0.1,
      cancelShare: 0.05,
      answerDelayMs: [100, 1_000],
      slowAnswerShare: 0.3,
      slowAnswerMs: 3_000,
      settleMs: 30_000,
      chunkGapMs: [20, 100],
      toolHoldMs: [20, 250],
    });
    console.log(`turn chaos (sqlite): ${JSON.stringify({ ...report, problems: report.problems.length })}`);
    if (report.problems.length > 0) console.log(`turn chaos (sqlite) problems (seed ${SEED}):\n  ${report.problems.slice(0, 40).join('\n  ')}`);
    expect(report.kills).toBe(4);
    expect(report.problems.slice(0, 20)).toEqual([]);
    // The run must have exercised what it checks.
    expect(report.turnsCaught).toBeGreaterThan(0);
    expect(report.approvals.requested).toBeGreaterThan(0);
    // Five host starts (each loads its TypeScript config through tsx), 4 to 10 s of kills, up to 30 s to settle.
  }, 60_000);
});
