import type { ToolResultStatus } from './messages.js';
import type { ToolFailureKind } from './tool-retry.js';

/** Issue 30: one run of a tool its retry policy ran more than once. */
export interface ToolAttempt {
  /** From 1. */
  attempt: number;
  status: ToolResultStatus;
  /** Why the run failed, when a retry policy may try that failure again; null otherwise. */
  failure: ToolFailureKind | null;
  durationMs: number;
}

/** RL-4: whether a dispatched call was let through, and who decided. */
export type AuditVerdict = 'allowed' | 'denied' | 'none';

/**
 * Who decided: the session's permission `mode`, a `rule` (the tool's own `authorize`, a permission
 * rule — whose result then names it, `denied by the permission rule 'github__*: deny'` — or the
 * delegation and non-interactive rules), a dispatch
 * `hook`, the `user` answering an approval, or its `timeout` (issue 26: nobody answered before the
 * agent's `approvalTimeoutMs`). Null when nothing had to decide (a control tool, a
 * call refused before any decision: unknown tool, invalid arguments, doom loop, a cancel).
 */
export type AuditDecider = 'mode' | 'rule' | 'hook' | 'user' | 'timeout';

export interface AuditDecision {
  verdict: Exclude<AuditVerdict, 'none'>;
  by: AuditDecider;
  /** Issue 25: the principal that answered the approval, when the user decided and the answer named one. */
  principal?: string;
}

/** What a tool result's audit row adds to the result message it is written with. */
export interface ToolAudit {
  toolCallId: string;
  toolName: string;
  /** sha256 (hex) of the arguments as the model sent them, in canonical JSON (keys sorted); of the raw text when it was no JSON object. */
  argumentsHash: string;
  /** sha256 of the arguments the tool ran with, when a `beforeToolDispatch` hook rewrote them; else null. */
  dispatchedArgumentsHash: string | null;
  verdict: AuditVerdict;
  decidedBy: AuditDecider | null;
  status: ToolResultStatus;
  /** `hook_failed`, `hook_timeout`, `hook_invalid_rewrite` when a hook failed the call; else null. */
  errorCode: string | null;
  /** How long the call waited for the user's answer; null when it never asked. */
  permissionWaitMs: number | null;
  /** How long the tool ran; null when it never ran. */
  executionMs: number | null;
  /**
   * Issue 25: who the call answers to — the principal that answered its approval when the user
   * decided, else the session's owner (the principal the dispatch acted for); null for a session
   * stored before principals.
   */
  principal: string | null;
  /** Issue 30: each run of a call its retry policy ran more than once; absent for a call that ran once or never. */
  attempts?: ToolAttempt[];
}

/** One audit row as read back: the audit plus where its result message sits. */
export interface AuditEntry extends ToolAudit {
  /** The id of the tool result message written in the same transaction. */
  id: string;
  sessionId: string;
  turnId: string;
  /** The result message's sequence: the log's order and its page cursor. */
  sequence: number;
  createdAtMs: number;
}

export interface AuditPage {
  /** At most this many entries (default 50, at most 500). */
  limit?: number;
  /** Only entries whose sequence is below this one: the `nextBefore` of the previous page. */
  before?: number;
}

/** Newest first; `nextBefore` pages on, null on the last page. */
export interface AuditLog {
  entries: AuditEntry[];
  nextBefore: number | null;
}
