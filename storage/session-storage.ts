import type { StoredMessage } from '../src/protocol/messages.js';
import type { StoredTurnStatus } from '../src/protocol/outcome.js';
import type { Plan } from '../src/protocol/plan.js';
import type { SpanStatus, TraceSpan } from '../src/protocol/trace.js';

export type PermissionMode = 'ask' | 'auto' | 'read_only';

export interface SessionRow {
  id: string;
  agent: string;
  permissionMode: PermissionMode;
  workspaceDir: string | null;
  createdAtMs: number;
}

export interface TurnRow {
  id: string;
  sessionId: string;
  clientRequestId: string;
  status: StoredTurnStatus;
  errorCode: string | null;
  errorMessage: string | null;
  finalText: string | null;
  startedAtMs: number;
  finishedAtMs: number | null;
}

export interface TurnEnd {
  status: Exclude<StoredTurnStatus, 'running' | 'interrupted'>;
  errorCode: string | null;
  errorMessage: string | null;
  finalText: string | null;
  finishedAtMs: number;
}

export interface SpanEnd {
  status: Exclude<SpanStatus, 'running'>;
  errorCode: string | null;
  endedAtMs: number;
}

export type SpanWrite = { type: 'start'; span: TraceSpan } | { type: 'end'; spanId: string; end: SpanEnd };

export interface PlanRow {
  turnId: string;
  sessionId: string;
  plan: Plan;
  updatedAtMs: number;
}

export interface CorrectionReport {
  interruptedTurns: number;
  unknownSpans: number;
}

/**
 * The durable side of a session (RT-23). Every method either completes or rejects;
 * the runtime decides what a rejection means (RT-26), the storage never retries.
 */
export interface SessionStorage {
  /** Creates or upgrades the schema. Idempotent. */
  migrate(): Promise<void>;

  createSession(row: SessionRow): Promise<void>;
  getSession(id: string): Promise<SessionRow | undefined>;
  setPermissionMode(sessionId: string, mode: PermissionMode): Promise<void>;

  /** The first step of a turn (RT-10): the turn row and its opening messages, in one transaction. */
  beginTurn(turn: { id: string; sessionId: string; clientRequestId: string; startedAtMs: number }, messages: StoredMessage[]): Promise<void>;
  endTurn(turnId: string, end: TurnEnd): Promise<void>;
  getTurn(turnId: string): Promise<TurnRow | undefined>;
  listTurns(sessionId: string): Promise<TurnRow[]>;

  appendMessage(message: StoredMessage): Promise<void>;
  /** The session's messages ordered by sequence. */
  listMessages(sessionId: string): Promise<StoredMessage[]>;

  savePlan(row: PlanRow): Promise<void>;
  /** The most recently written plan of the session, if any. */
  latestPlan(sessionId: string): Promise<PlanRow | undefined>;

  /**
   * Trace signals in order, in one transaction: a `start` inserts the span, an `end` closes a running
   * one. Ends that find no running span (its start was dropped) are counted, not raised.
   */
  writeSpans(writes: SpanWrite[]): Promise<{ unmatchedEnds: number }>;
  listSpans(sessionId: string): Promise<TraceSpan[]>;

  /** RT-24: running spans → outcome_unknown, running turns → interrupted, in one transaction. */
  correctInterrupted(nowMs: number): Promise<CorrectionReport>;

  close(): Promise<void>;
}
