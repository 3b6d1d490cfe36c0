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

/** A compaction checkpoint (CP-3): what replaced the conversation up to its boundary. */
export interface CompactionRow {
  id: string;
  sessionId: string;
  /** 1, 2, 3 … per session, in the order checkpoints were made. */
  position: number;
  /** The last message the summary covers; later messages stay verbatim. */
  boundaryMessageId: string;
  boundarySequence: number;
  summary: string;
  /** The last real user request when the checkpoint was made, replayed first in the compacted view (CP-2). */
  replayText: string | null;
  createdAtMs: number;
  /** Set while a rewind has gone back to an earlier checkpoint. */
  rewoundAtMs: number | null;
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

  /** Idempotent by message id: writing an id that exists already changes nothing (CW-2's retried world-state writes). */
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

  /** CP-3: stores a compaction checkpoint. */
  saveCompaction(row: CompactionRow): Promise<void>;
  /** The session's checkpoints by `position`, rewound ones included. */
  listCompactions(sessionId: string): Promise<CompactionRow[]>;
  /** The checkpoint the conversation is built from: the highest `position` not rewound. */
  activeCompaction(sessionId: string): Promise<CompactionRow | undefined>;
  /**
   * Makes `compactionId` the active checkpoint again, in one transaction: it is un-rewound and every
   * checkpoint of the session with a higher position is marked rewound at `nowMs`. Rejects when the
   * id is not a checkpoint of that session.
   */
  rewindTo(sessionId: string, compactionId: string, nowMs: number): Promise<void>;

  /** RT-24: running spans → outcome_unknown, running turns → interrupted, in one transaction. */
  correctInterrupted(nowMs: number): Promise<CorrectionReport>;

  close(): Promise<void>;
}
