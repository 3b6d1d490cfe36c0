import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * What the reliability suite did, counted across its test files (each runs in its own worker):
 * every file adds its counts to one file as it goes, and the global setup's teardown prints the
 * totals once at the end of the run and leaves them in `SUMMARY_FILE` for `.ci/run` to repeat.
 */
export const TALLY_FILE = resolve(import.meta.dirname, '../../.turnchart/reliability-tally.jsonl');
export const SUMMARY_FILE = resolve(import.meta.dirname, '../../.turnchart/reliability-summary.txt');

/** Adds `n` to the count named `what` (e.g. `kills:sqlite`). */
export function tally(what: string, n = 1): void {
  appendFileSync(TALLY_FILE, `${JSON.stringify({ what, n })}\n`);
}

export function resetTally(): void {
  mkdirSync(dirname(TALLY_FILE), { recursive: true });
  rmSync(TALLY_FILE, { force: true });
  rmSync(SUMMARY_FILE, { force: true });
}

/** The counts so far, summed by name. */
function readTally(): Map<string, number> {
  const totals = new Map<string, number>();
  if (!existsSync(TALLY_FILE)) return totals;
  for (const line of readFileSync(TALLY_FILE, 'utf8').split('\n')) {
    if (!line) continue;
    const { what, n } = JSON.parse(line) as { what: string; n: number };
    totals.set(what, (totals.get(what) ?? 0) + n);
  }
  return totals;
}

/** The totals, one line each in name order, the kills of both dialects added up; also written to `SUMMARY_FILE`. */
export function summarizeTally(): string[] {
  const totals = readTally();
  const kills = [...totals].filter(([what]) => what.startsWith('crash kills on ')).reduce((sum, [, n]) => sum + n, 0);
  if (kills > 0) totals.set('crash kills in all', kills);
  const lines = [...totals].sort(([a], [b]) => a.localeCompare(b)).map(([what, n]) => `${what}: ${n}`);
  writeFileSync(SUMMARY_FILE, `${lines.join('\n')}\n`);
  return lines;
}
