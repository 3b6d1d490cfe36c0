import type { GuardrailTrackers, LoopTracker } from '../machines/guardrails.js';

/**
 * GR-2a: the session's guardrail trackers in the `turns.guardrail_trackers` column, as JSON. They
 * are written with the turn's terminal status and read back when the session opens; a value this
 * storage did not write (edited by hand, cut short) reads as none, so the session starts its
 * trackers afresh rather than feeding its charts something they cannot count with.
 */

export function encodeTrackers(trackers: GuardrailTrackers | null | undefined): string | null {
  return trackers ? JSON.stringify({ loop: trackers.loop, mistakes: trackers.mistakes }) : null;
}

export function decodeTrackers(text: string | null | undefined): GuardrailTrackers | undefined {
  if (text === null || text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const v = value as { loop?: unknown; mistakes?: unknown } | null;
  if (typeof v !== 'object' || v === null || !isCount(v.mistakes) || !isLoopTracker(v.loop)) return undefined;
  return { loop: v.loop, mistakes: v.mistakes };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function isLoopTracker(value: unknown): value is LoopTracker {
  const t = value as Partial<LoopTracker> | null;
  return (
    typeof t === 'object' &&
    t !== null &&
    (t.signature === null || typeof t.signature === 'string') &&
    isCount(t.count) &&
    Array.isArray(t.recent) &&
    t.recent.every((h) => typeof h === 'string') &&
    isCount(t.waitTimeouts)
  );
}
