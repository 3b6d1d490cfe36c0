import { z } from 'zod';
import type { StoredTurnStatus } from './outcome.js';
import type { TurnPhase } from './updates.js';

/**
 * Issue 30: a run's status in the seed's words (RL-1 "Run Lifecycle"). A run is its turn: the
 * stored turn status says all of them but `waiting_tool`, which only the live phase knows.
 */
export const runStatusSchema = z.enum(['queued', 'running', 'waiting_tool', 'completed', 'failed', 'cancelled', 'timed_out']);
export type RunStatus = z.infer<typeof runStatusSchema>;

/** The phases in which the run waits on its tool calls: running them, or asking for their approval. */
const TOOL_PHASES: ReadonlySet<TurnPhase> = new Set<TurnPhase>(['running_tools', 'waiting_permission']);

/** What a run stored `interrupted` (its host went away and it did not go on) is called: the seed has no such status. */
const INTERRUPTED_CODE = 'interrupted';

/** The run's status from its turn's stored status and, while it runs, its live phase (null when not known here). */
export function runStatusOf(stored: StoredTurnStatus, livePhase: TurnPhase | null): RunStatus {
  if (stored === 'interrupted') return 'failed';
  if (stored === 'running' && livePhase !== null && TOOL_PHASES.has(livePhase)) return 'waiting_tool';
  return stored;
}

/** The run's error code: the turn's, or `interrupted` for a run its host left behind. */
export function runErrorCodeOf(stored: StoredTurnStatus, errorCode: string | null): string | null {
  return stored === 'interrupted' ? (errorCode ?? INTERRUPTED_CODE) : errorCode;
}

/** Whether a run with this stored status has ended. */
export function runHasEnded(stored: StoredTurnStatus): boolean {
  return stored !== 'queued' && stored !== 'running';
}
