import { randomInt } from 'node:crypto';

/**
 * The seeds of the reliability suite's random draws: the storage calls the crash harness kills at,
 * and the command schedules. Each run draws fresh ones unless the environment names them, so CI
 * explores new cases every run and any failure replays from the seeds printed at the start.
 */
export const SEED_VARIABLES = {
  crash: 'TURNCHART_CRASH_SEED',
  schedules: 'TURNCHART_SCHEDULE_SEED',
  /** Issue 26's turn chaos run (test/reliability/turn-chaos.test.ts): session plans, kill moments and victims. */
  turnChaos: 'TURNCHART_TURN_CHAOS_SEED',
} as const;

/** Vitest global setup (main process): fixes each seed before the workers start, so every file draws from the same one. */
export function chooseSeeds(): void {
  for (const name of Object.values(SEED_VARIABLES)) {
    const given = process.env[name];
    if (given !== undefined && !/^-?\d+$/.test(given)) throw new Error(`${name} must be an integer, not '${given}'`);
    process.env[name] = given ?? String(randomInt(2 ** 31 - 1));
    console.log(`reliability seed: ${name}=${process.env[name]}${given === undefined ? ' (drawn for this run)' : ' (given)'}`);
  }
}

/** The seed a test file draws with (set by the global setup; read here in a worker). */
export function seedOf(kind: keyof typeof SEED_VARIABLES): number {
  const value = process.env[SEED_VARIABLES[kind]];
  if (value === undefined) throw new Error(`${SEED_VARIABLES[kind]} is not set: run through vitest.reliability.config.ts`);
  return Number(value);
}
