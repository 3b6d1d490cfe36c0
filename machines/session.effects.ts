import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { GuardrailTrackers } from './guardrails.js';
import type { PermissionDecision } from '../src/protocol/updates.js';

/**
 * The session chart's effect contract (machines/session.machine.ts): the effects it asks the
 * runtime for, with their inputs and outputs, and the params of the actions it names. The runtime's
 * side is src/runtime/session-effects.ts (with compaction-effects.ts and delegation-effects.ts).
 */

/** What `finishTurn` reports: whether the turn's row was ever written (a turn that never was is forgotten). */
export interface FinishTurnOutput {
  stored: boolean;
  /** Issue 26: the end was refused by the fence: another host holds the session, and the turn is its to end. */
  ownedElsewhere?: boolean;
}

export interface FinishTurnInput {
  sessionId: string;
  turnId: string;
  outcome: TurnOutcome;
  /** Stored with the terminal status: the next turn, after a restart too, starts from them (GR-2a). */
  trackers: GuardrailTrackers;
}

/** The effects the session asks the runtime for. */
export type SessionEffects = {
  /** Stores the terminal status (a turn is over only once stored). */
  finishTurn: { input: FinishTurnInput; output: FinishTurnOutput };
  /** Manual compaction (RT-6, CP-3): summarize, store a checkpoint, install it. */
  compact: { input: { sessionId: string }; output: { compactionId: string } };
  /** Makes an earlier checkpoint the active one and installs it (CP-3). */
  rewindConversation: { input: { sessionId: string; compactionId: string }; output: void };
  /** Loads the conversation from storage again, the way out of `reloadRequired` (CP-4). */
  reloadConversation: { input: { sessionId: string }; output: void };
  /** agent.switch: stores the new agent with a note in the conversation, and installs it for the next turn. */
  switchAgent: { input: { sessionId: string; agent: string }; output: void };
  /**
   * The session closes: its lease is given up and its last update sequence stored exactly, so the
   * next opening numbers on from it. Asked only once nothing runs, the last turn's end stored.
   */
  closeSession: { input: { sessionId: string }; output: void };
};

/** The params of the runtime's `emitPermissionRequested`: the request the session has just recorded. */
export interface PermissionRequestParams {
  turnId: string;
  toolCallId: string;
  name: string;
  paths: string[];
}

/** The params of the runtime's `storeApprovalAnswer`: an answer the session took, to be kept in storage before anything acts on it (issue 26). */
export interface ApprovalAnswerParams {
  turnId: string;
  toolCallId: string;
  decision: PermissionDecision;
  principal?: string;
}

/** The params of the runtime's `settleCancelledQueuedTurn`: the queued turn that ends `cancelled` before it started. */
export interface QueuedTurnParams {
  turnId: string;
}
