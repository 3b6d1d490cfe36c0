import fc from 'fast-check';

/**
 * How the hostile-input suites run a property: a seed that is printed (fixed in `npm test`, fresh in
 * the reliability suite, or `HOSTILE_SEED`), a watchdog on every run so a hang fails as one, the
 * number of generated inputs logged for CI, and the command that replays a failure.
 */
export interface PropertyRun {
  /** Shown in the log and in the replay command's `-t`. */
  suite: string;
  /** The test file, for the replay command. */
  file: string;
  runs: number;
  /** A fixed seed, or `random` for a fresh one each run; `HOSTILE_SEED` overrides both. */
  seed: number | 'random';
  /** A run taking longer than this counts as a hang. */
  hangMs?: number;
}

const RELIABILITY_CONFIG = 'vitest.reliability.config.ts';

export function seedOf(seed: number | 'random'): number {
  const fromEnv = process.env.HOSTILE_SEED;
  if (fromEnv !== undefined && fromEnv !== '') return Number(fromEnv);
  return seed === 'random' ? (Math.random() * 2 ** 31) | 0 : seed;
}

/** Runs `check` over `runs` generated inputs; resolves with how many it checked, or throws the replay command. */
export async function checkProperty<T>(run: PropertyRun, arbitrary: fc.Arbitrary<T>, check: (value: T) => Promise<void>): Promise<number> {
  const seed = seedOf(run.seed);
  const path = process.env.HOSTILE_PATH || undefined;
  let count = 0;
  const started = performance.now();
  const details = await fc.check(
    fc.asyncProperty(arbitrary, async (value) => {
      count += 1;
      await check(value);
    }),
    { seed, numRuns: run.runs, timeout: run.hangMs ?? 10_000, markInterruptAsFailure: true, ...(path && { path, endOnFailure: true }) },
  );
  const ms = Math.round(performance.now() - started);
  console.log(`hostile ${run.suite}: ${count} generated inputs in ${ms} ms (fast-check seed ${seed})`);
  if (details.failed) throw new Error(failureReport(run, details));
  return count;
}

function failureReport<T>(run: PropertyRun, details: fc.RunDetails<[T]>): string {
  const config = run.file.startsWith('test/reliability/') ? ` --config ${RELIABILITY_CONFIG}` : '';
  const replay = `HOSTILE_SEED=${details.seed} HOSTILE_PATH=${details.counterexamplePath ?? ''} npx vitest run${config} ${run.file} -t ${JSON.stringify(run.suite)}`;
  return [
    `hostile ${run.suite} failed after ${details.numRuns} runs (seed ${details.seed}, path ${details.counterexamplePath ?? '-'})`,
    `replay: ${replay}`,
    `counterexample: ${describeValue(details.counterexample)}`,
    `error: ${describeError(details.errorInstance)}`,
  ].join('\n');
}

/** The error with its chain of causes (fetch hides the socket's error in `cause`). */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return describeValue(error);
  return error.cause === undefined ? (error.stack ?? error.message) : `${error.stack ?? error.message}\ncaused by: ${describeError(error.cause)}`;
}

/** fast-check's own printing, which may itself trip over a hostile value. */
function describeValue(value: unknown): string {
  try {
    return fc.stringify(value).slice(0, 4_000);
  } catch {
    return '(a value that cannot be printed)';
  }
}
