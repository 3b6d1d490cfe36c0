import type { AuditEntry, ToolAudit } from '../src/protocol/audit.js';
import type { BusyPolicy, PermissionMode, TriggerType } from '../src/protocol/commands.js';
import type { LeaseHolder, OwnerIdentity } from '../src/protocol/session-owner.js';
import type { ChatMessage, StoredMessage } from '../src/protocol/messages.js';
import type { StoredTurnStatus } from '../src/protocol/outcome.js';
import type { Plan } from '../src/protocol/plan.js';
import type { SpanFacts, SpanStatus, TraceSpan } from '../src/protocol/trace.js';
import type { GuardrailTrackers } from '../machines/guardrails.js';

export interface SessionRow {
  id: string;
  agent: string;
  permissionMode: PermissionMode;
  workspaceDir: string | null;
  createdAtMs: number;
  /** Default `reject`. */
  busyPolicy?: BusyPolicy;
  /** Read back only: every update sequence up to this one may have been issued (a new owner starts above it). */
  updateSequence?: number;
  /** A sub-agent's session: what started it. */
  parent?: AgentLink;
  /** Nobody can answer an approval: a call that would ask is a rule denial (every sub-agent's session). */
  nonInteractive?: boolean;
  /** Issue 25: the principal that owns it; absent (null when read) for a session stored before principals. */
  principal?: string | null;
  /** Issue 25: created by an admin (or a sub-agent of such a session): its turns draw on no principal's daily token budget. */
  quotaExempt?: boolean;
  /** Issue 26: a turn running when its host went away goes on when the session is next opened (else it is corrected `interrupted`). */
  resumeTurns?: boolean;
}

/** Where a child session came from: the parent session, its turn, and the `spawn_agent` call. */
export interface AgentLink {
  sessionId: string;
  turnId: string;
  toolCallId: string;
}

/** What a host asks of a session before it routes or opens it for a request (issue 25). */
export interface SessionStanding {
  /** Null for a session stored before principals. */
  principal: string | null;
  /** Null when nobody holds a live lease. */
  holder: LeaseHolder | null;
}

export interface LeaseRequest extends OwnerIdentity {
  ttlMs: number;
}

export type AcquireResult =
  /** `tookOver`: the lease was another owner's, and had run out (that owner died or stalled). */
  | { ok: true; session: SessionRow; fence: number; corrected: CorrectionReport; tookOver: boolean }
  | { ok: false; reason: 'unknown' }
  | { ok: false; reason: 'owned'; holder: LeaseHolder };

/** Issue 26: an approval a tool call asked for, and its answer once given. */
export interface ApprovalRow {
  turnId: string;
  toolCallId: string;
  sessionId: string;
  toolName: string;
  paths: string[];
  requestedAtMs: number;
  /** Null: it waits until answered. */
  expiresAtMs: number | null;
  /** Null while pending. */
  decision: 'allow_once' | 'deny' | 'cancelled' | 'expired' | null;
  answeredBy: string | null;
  /** When the allowed call began to run; null: it never did (or the row was read before it did). */
  startedAtMs?: number | null;
}

/** The answer to an approval, or how it ended unanswered. */
export interface ApprovalAnswer {
  turnId: string;
  toolCallId: string;
  decision: NonNullable<ApprovalRow['decision']>;
  principal: string | null;
  answeredAtMs: number;
}

/** A turn accepted while another ran, waiting in the session's queue with its input (RL-2). */
export interface QueuedTurnRow {
  id: string;
  sessionId: string;
  clientRequestId: string;
  runId: string;
  trigger: TriggerType;
  /** The messages the turn writes when it starts: skill snapshots, then the user's text. */
  input: ChatMessage[];
  queuedAtMs: number;
  /** Issue 25: the session's principal, written into the turn's row for the principal's quotas. */
  principal?: string | null;
  /** Issue 27: the W3C `traceparent` of the turn's parent (the caller's, or a synthetic root); absent for a row stored before 011. */
  traceParent?: string | null;
}

export interface TurnStart {
  id: string;
  sessionId: string;
  clientRequestId: string;
  startedAtMs: number;
  /** The run record written with the turn (RL-1); none for turns started by older callers. */
  run?: { id: string; trigger: TriggerType };
  /** The turn was stored `queued` by `enqueueTurn`: its row exists and moves to `running`. */
  fromQueue?: boolean;
  /** Issue 25: the session's principal, written into the turn's row for the principal's quotas (a queued row has it already). */
  principal?: string | null;
  /** Issue 27: the W3C `traceparent` of the turn's parent, written into a new row (a queued row has it already). */
  traceParent?: string | null;
}

/** Issue 25: what a principal's turns come to, for its quotas (`turnActivity`). */
export interface TurnActivity {
  /** Its turns running or queued now. */
  active: number;
  /** Its turns started (or queued) at or after the time asked about. */
  recent: number;
  /** The earliest `startedAtMs` of those; null when there are none. */
  oldestRecentMs: number | null;
  /** Whether the session named already has a turn for the client request named (a request sent again). */
  known: boolean;
}

/** Issue 25: a principal's open stream, held by a host (`ownerId`) for `ttlMs` at a time. */
export interface StreamSlot {
  id: string;
  principal: string;
  ownerId: string;
  ttlMs: number;
}

export interface SessionPage {
  limit: number;
  /** The last session of the previous page (sessions come newest first). */
  before?: { createdAtMs: number; id: string };
  /** Only this principal's sessions (issue 25); all of them when absent. */
  principal?: string;
}

export interface AuditQuery {
  limit: number;
  before?: number;
}

export interface MessagePage {
  afterSequence?: number;
  limit?: number;
}

/** A write carried a fencing token that is no longer the session's: another owner has taken it over. */
export class FencedWriteError extends Error {
  readonly code = 'SessionOwnedElsewhere';
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} has a new owner: this write carries a stale fencing token`);
    this.name = 'FencedWriteError';
  }
}

export interface TurnRow {
  id: string;
  sessionId: string;
  clientRequestId: string;
  status: StoredTurnStatus;
  runId: string | null;
  trigger: TriggerType | null;
  errorCode: string | null;
  errorMessage: string | null;
  finalText: string | null;
  startedAtMs: number;
  finishedAtMs: number | null;
  /** GR-2a: the session's guardrail trackers as this turn left them; absent for a turn that did not end itself (interrupted, cancelled while queued). */
  trackers?: GuardrailTrackers;
  /** Issue 26: when its owner accepted a cancel while it ran; a turn left running with one is ended `cancelled`, not resumed. */
  cancelRequestedAtMs?: number;
  /** Issue 27: the W3C `traceparent` of the turn's parent, as stored with it; absent for a turn stored before 011. */
  traceParent?: string;
}

/** Issue 30: a run (RL-1's run record) with the turn it runs: the run resource of `GET /runs/{runId}`. */
export interface RunRow extends TurnRow {
  runId: string;
  trigger: TriggerType;
  /** When the run was created: when its turn started, or was queued. */
  runCreatedAtMs: number;
}

/** Issue 30: a page of a session's runs, newest first. */
export interface RunPage {
  limit: number;
  /** The last run of the previous page. */
  before?: { createdAtMs: number; id: string };
}

export interface TurnEnd {
  /** `interrupted`: only a turn its host left that its session may not resume (issue 26: the agent's `resume: false`). */
  status: Exclude<StoredTurnStatus, 'running' | 'queued'>;
  errorCode: string | null;
  errorMessage: string | null;
  finalText: string | null;
  finishedAtMs: number;
  /** GR-2a: the session's guardrail trackers after the turn, stored in the same write as its terminal status. */
  trackers?: GuardrailTrackers | null;
}

export interface SpanEnd {
  status: Exclude<SpanStatus, 'running'>;
  errorCode: string | null;
  endedAtMs: number;
  /** What the end adds for the span's observers (issue 27); never stored. */
  facts?: SpanFacts;
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
 *
 * Writes of a session take the fencing token its owner holds (`fence`): a write whose token is no
 * longer the session's is refused with `FencedWriteError` and changes nothing. A write without a
 * token is not checked (tools and tests that own the database outright).
 */
export interface SessionStorage {
  /** Creates or upgrades the schema. Idempotent. */
  migrate(): Promise<void>;
  /** Answers once the database does: the health check. */
  ping(): Promise<void>;

  /** Creates the session (with `updateSequence` reserved), held by `owner` when given; resolves with the fencing token to write with. */
  createSession(row: SessionRow, owner?: LeaseRequest): Promise<number>;
  getSession(id: string): Promise<SessionRow | undefined>;
  /** Newest first. */
  listSessions(page: SessionPage): Promise<SessionRow[]>;
  setPermissionMode(sessionId: string, mode: PermissionMode, fence?: number): Promise<void>;
  /** The sessions `spawn_agent` started from this one, oldest first. */
  listChildSessions(parentSessionId: string): Promise<SessionRow[]>;
  /** agent.switch: the session's agent and the note that records the switch in the conversation, in one transaction. */
  switchAgent(sessionId: string, agent: string, note: StoredMessage | null, fence?: number): Promise<void>;

  /**
   * Takes the session for `lease` when nobody else holds a live lease on it, in one transaction:
   * the token is raised, and when the session changes hands whatever its last owner left running
   * is corrected as a restart corrects it (RT-24). The owner's own session is simply renewed.
   * `reserveSequences` more update sequences are reserved; the row returned has the old `updateSequence`.
   */
  acquireSession(sessionId: string, lease: LeaseRequest, reserveSequences?: number): Promise<AcquireResult>;
  /** Extends the leases `lease.ownerId` still holds among `sessionIds`; resolves with those it renewed. */
  renewLeases(lease: LeaseRequest, sessionIds: string[]): Promise<string[]>;
  /** Gives the session up (a clean close), recording the last update sequence issued. */
  releaseSession(sessionId: string, ownerId: string, lastUpdateSequence: number, fence?: number): Promise<void>;
  /** Owners on `host` holding live leases: a runtime checks whether their processes still exist. */
  liveOwnersOn(host: string): Promise<OwnerIdentity[]>;
  /** Who holds the session's live lease, read without taking anything; null when nobody does (or there is no such session). */
  leaseHolder(sessionId: string): Promise<LeaseHolder | null>;
  /** Issue 25: the session's owning principal and its live lease's holder, in one read; null when there is no such session. */
  sessionStanding(sessionId: string): Promise<SessionStanding | null>;
  /** Issue 25: the principal's sessions some host holds a live lease on (the database's clock). */
  heldSessionCount(principal: string): Promise<number>;
  /**
   * Issue 25, in one read: the principal's running and queued turns, those started at or after
   * `sinceMs` (and the earliest of them), and whether `request` already has its turn.
   */
  turnActivity(principal: string, sinceMs: number, request?: { sessionId: string; clientRequestId: string }): Promise<TurnActivity>;
  /** Issue 25: adds input plus output tokens to the principal's count for `day` (`YYYY-MM-DD`, UTC). */
  addPrincipalTokens(principal: string, day: string, tokens: number): Promise<void>;
  /** Issue 25: the principal's tokens counted for `day`; 0 when none. */
  principalTokens(principal: string, day: string): Promise<number>;
  /**
   * Issue 25: takes a stream slot for `slot.principal` when fewer than `max` of its slots are live
   * (unexpired on the database's clock); false, and nothing written, when that many are. Expired
   * slots of the principal are deleted on the way.
   */
  claimStreamSlot(slot: StreamSlot, max: number): Promise<boolean>;
  releaseStreamSlot(slotId: string): Promise<void>;
  /** Extends every slot `ownerId` holds to `ttlMs` from now. */
  renewStreamSlots(ownerId: string, ttlMs: number): Promise<void>;
  /** Deletes every slot `ownerId` holds (a host shutting down). */
  releaseStreamSlots(ownerId: string): Promise<void>;
  /** Ends every lease of an owner known to be gone (its process no longer exists). */
  expireOwner(ownerId: string): Promise<void>;
  /**
   * Sessions nobody holds that have work: queued turns, or (issue 26) a turn to resume that waits for
   * more than a human (an unanswered approval that has not expired keeps its session closed until the
   * answer comes). A starting runtime, and the cluster's sweep, open them.
   */
  unheldSessionsWithWork(): Promise<string[]>;
  /** Issue 26: records an approval request; a request already recorded is kept as it is (its expiry too). */
  requestApproval(row: ApprovalRow): Promise<void>;
  /** Issue 26: records the first answer to an approval; a later one changes nothing. */
  answerApproval(answer: ApprovalAnswer): Promise<void>;
  /** Issue 26: the approvals a turn asked for, oldest first. */
  listApprovals(turnId: string): Promise<ApprovalRow[]>;
  /**
   * Issue 26: an allowed call begins to run: the start is stored, with the allowance if its own write
   * has not landed yet, so a resumed turn never takes a call that may have run for one that did not.
   */
  startApprovedCall(answer: ApprovalAnswer): Promise<void>;
  /** Issue 26: records that a cancel of the running turn was accepted (a turn no longer running is left alone). */
  requestCancel(turnId: string, atMs: number): Promise<void>;
  /** Records that update sequences up to `upTo` may be issued (never lowers it). */
  reserveUpdateSequence(sessionId: string, upTo: number, fence?: number): Promise<void>;

  /** The first step of a turn (RT-10): the turn row (or its queued row, moved to running), its run and its opening messages, in one transaction. */
  beginTurn(turn: TurnStart, messages: StoredMessage[], fence?: number): Promise<void>;
  /** Stores a turn that waits behind the running one, with its input and its run (RL-2). */
  enqueueTurn(turn: QueuedTurnRow, fence?: number): Promise<void>;
  /** A queued turn cancelled before it started; rejects when it is no longer queued. */
  cancelQueuedTurn(turnId: string, finishedAtMs: number, fence?: number): Promise<void>;
  /** The session's queued turns in the order they were queued. */
  listQueuedTurns(sessionId: string): Promise<QueuedTurnRow[]>;
  endTurn(turnId: string, end: TurnEnd, fence?: number): Promise<void>;
  getTurn(turnId: string): Promise<TurnRow | undefined>;
  listTurns(sessionId: string): Promise<TurnRow[]>;
  /** Issue 30: the run and its turn; undefined when there is no such run. */
  getRun(runId: string): Promise<RunRow | undefined>;
  /** Issue 30: the session's runs, newest first (by creation, then id). */
  listRuns(sessionId: string, page: RunPage): Promise<RunRow[]>;

  /**
   * Idempotent by message id: writing an id that exists already changes nothing (CW-2's retried
   * world-state writes). A tool result comes with its `audit` (RL-4), written in the same row by the
   * same fenced statement: a result is never stored without its audit, nor an audit without its result.
   */
  appendMessage(message: StoredMessage, fence?: number, audit?: ToolAudit): Promise<void>;
  /** The session's messages ordered by sequence; a page when given. */
  listMessages(sessionId: string, page?: MessagePage): Promise<StoredMessage[]>;

  /** RL-4: the session's audit rows, newest first: at most `limit`, below sequence `before` when given. */
  listAudit(sessionId: string, page: AuditQuery): Promise<AuditEntry[]>;

  savePlan(row: PlanRow, fence?: number): Promise<void>;
  /** The most recently written plan of the session, if any. */
  latestPlan(sessionId: string): Promise<PlanRow | undefined>;

  /**
   * Trace signals in order, in one transaction: a `start` inserts the span, an `end` closes a running
   * one. Ends that find no running span (its start was dropped) are counted, not raised. Not fenced:
   * spans are signals that never decide a branch (RT-12), and a restart corrects the running ones.
   */
  writeSpans(writes: SpanWrite[]): Promise<{ unmatchedEnds: number }>;
  listSpans(sessionId: string): Promise<TraceSpan[]>;

  /** CP-3: stores a compaction checkpoint. */
  saveCompaction(row: CompactionRow, fence?: number): Promise<void>;
  /** The session's checkpoints by `position`, rewound ones included. */
  listCompactions(sessionId: string): Promise<CompactionRow[]>;
  /** The checkpoint the conversation is built from: the highest `position` not rewound. */
  activeCompaction(sessionId: string): Promise<CompactionRow | undefined>;
  /**
   * Makes `compactionId` the active checkpoint again, in one transaction: it is un-rewound and every
   * checkpoint of the session with a higher position is marked rewound at `nowMs`. Rejects when the
   * id is not a checkpoint of that session.
   */
  rewindTo(sessionId: string, compactionId: string, nowMs: number, fence?: number): Promise<void>;

  /**
   * RT-24, for sessions nobody holds a live lease on: running spans → outcome_unknown, running turns →
   * interrupted (except in sessions that resume their turns, issue 26: those stay running for the
   * next opening to go on with), in one transaction; such a session's token is raised so its last
   * owner can no longer write.
   */
  correctInterrupted(nowMs: number): Promise<CorrectionReport>;

  close(): Promise<void>;
}
