import { POSTGRES_TWINS } from '../databases.js';

/**
 * Generated inputs per hostile suite: `quick` in `npm test`, `full` in the reliability suite, where
 * they add up to 100 000 (issue 9). Each suite splits its count across the dialects it runs on, so
 * the total holds with or without PostgreSQL.
 */
export const BUDGET = {
  'public commands': { quick: 1_500, full: 40_000 },
  'http bodies': { quick: 600, full: 16_000 },
  'http paths': { quick: 400, full: 12_000 },
  'http queries': { quick: 400, full: 12_000 },
  'http headers': { quick: 400, full: 10_000 },
  'http events': { quick: 200, full: 6_000 },
  'http storage faults': { quick: 300, full: 4_000 },
} as const;

export type SuiteName = keyof typeof BUDGET;
export type Size = 'quick' | 'full';

const FULL_TOTAL = Object.values(BUDGET).reduce((sum, b) => sum + b.full, 0);
if (FULL_TOTAL !== 100_000) throw new Error(`the full hostile suites generate ${FULL_TOTAL} inputs, not 100 000`);

/** The inputs one dialect's run of a suite generates. */
export function runsFor(suite: SuiteName, size: Size, dialect: string): number {
  const total = BUDGET[suite][size];
  if (!POSTGRES_TWINS) return total;
  return dialect === 'sqlite' ? Math.ceil(total / 2) : Math.floor(total / 2);
}

/** `npm test` replays fixed seeds; the reliability suite explores with fresh ones (printed, and replayable with HOSTILE_SEED). */
export function seedFor(size: Size, fixed: number): number | 'random' {
  return size === 'quick' ? fixed : 'random';
}
