import { relative, resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL } from '../support/databases.js';
import { seedOf, SEED_VARIABLES } from '../support/reliability-seeds.js';
import { tally } from '../support/reliability-tally.js';
import { killAndRecover, crashWorkspace, type Dialect } from './crash-recovery.js';
import { runHost } from './host-control.js';

/**
 * The crash harness's two kinds of kill, as suites a test file runs on one dialect (the kills are
 * spread over several files so vitest's workers share them). Each kill is its own test, named by
 * where it lands, so a failure names its kill point.
 */

/** Where to kill: a point of `crash-host.ts` and which of its occurrences in the turn. */
export const KILL_POINTS: [string, number][] = [
  ['model-stream', 1],
  ['after-assistant-write', 1],
  ['inside-tool', 1],
  ['after-result-write', 1],
  ['after-assistant-write', 2],
  ['waiting-approval', 1],
  ['after-result-write', 2],
];

const skipReason = (dialect: Dialect) => (dialect === 'postgres' && !POSTGRES_URL ? 'no PostgreSQL server (TEST_DATABASE_URL unset)' : null);

/** SIGKILL at every named point, `repeats` times each. */
export function namedPointSuite(dialect: Dialect, repeats: number): void {
  const skip = skipReason(dialect);
  if (skip) console.log(`crash harness on ${dialect}: skipped — ${skip}`);
  let kills = 0;
  afterAll(() => console.log(`crash harness on ${dialect}: ${kills} kills at the ${KILL_POINTS.length} named points`));
  const cases = KILL_POINTS.flatMap((point) => Array.from({ length: repeats }, (_, run) => [`${point[0]}#${point[1]}`, run + 1, point] as const));
  describe(`SIGKILL at named points of a turn, then restart, on ${dialect}`, () => {
    it.skipIf(skip !== null).for(cases)('killed at %s (run %d)', async ([, , point]) => {
      const run = await killAndRecover(dialect, { point });
      expect(run.killed).toBe(true);
      kills += 1;
      tally(`crash kills on ${dialect}`);
    });
  });
}

/**
 * SIGKILL as the n-th storage call of the turn starts, n drawn at random with the run's crash seed:
 * the signal lands wherever the host has got to, mid-write included. One undisturbed run first
 * lists the turn's calls, so each kill is named by the call it aims at.
 */
export async function randomCallSuite(dialect: Dialect, kills: number, file: string): Promise<void> {
  const testFile = relative(resolve(import.meta.dirname, '../..'), file);
  const skip = skipReason(dialect);
  const seed = seedOf('crash');
  const calls = skip ? [] : await undisturbedCalls(dialect);
  const draws = fc.sample(fc.integer({ min: 1, max: Math.max(1, calls.length) }), { seed, numRuns: kills });
  console.log(
    skip
      ? `crash harness on ${dialect}: random kills skipped — ${skip}`
      : `crash harness on ${dialect}: the turn makes ${calls.length} storage calls; ${kills} kills drawn with ${SEED_VARIABLES.crash}=${seed}; ` +
          `to replay one: ${SEED_VARIABLES.crash}=${seed} npx vitest run --config vitest.reliability.config.ts ${testFile} -t 'kill <n>:'`,
  );
  let landed = 0;
  afterAll(() => console.log(`crash harness on ${dialect}: ${landed} of ${kills} random kills landed before the host finished`));
  const cases = draws.map((call, i) => [i + 1, call, calls[call - 1] ?? '?'] as const);
  describe(`SIGKILL at storage calls drawn at random, then restart, on ${dialect}`, () => {
    it.skipIf(skip !== null).for(cases)('kill %d: at call %d (%s)', async ([, call]) => {
      const run = await killAndRecover(dialect, { call });
      if (!run.killed) return;
      landed += 1;
      tally(`crash kills on ${dialect}`);
    });
  });
}

async function undisturbedCalls(dialect: Dialect): Promise<string[]> {
  const ws = crashWorkspace(dialect);
  try {
    return (await runHost(ws.target, 'never')).calls;
  } finally {
    await ws.drop();
  }
}
