import type { WaitResult } from '../protocol/command-results.js';
import type { StoredMessage } from '../protocol/messages.js';
import type { QueuedTurnRow, TurnEnd } from '../../storage/session-storage.js';
import type { ChatMessage } from '../protocol/messages.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { TriggerType } from '../protocol/commands.js';
import type { TurnMeter } from './turn-meter.js';
import type { CallSlots, StartedRead } from './parallel-reads.js';
import { CallAudits } from './call-audits.js';
import type { AnyTool } from '../tools/define-tool.js';
import type { SpanFacts } from '../protocol/trace.js';
import { newTraceParent } from './trace-root.js';

/** A user message prepared before acceptance: skill snapshots first, then the user's text. */
interface PreparedInput {
  clientRequestId: string;
  messages: ChatMessage[];
  /** The run record written with the turn (RL-1). */
  runId: string;
  trigger: TriggerType;
  /** Stored `queued` first (RL-2): starting it moves that row to running. */
  fromQueue: boolean;
  /** Issue 27: the W3C traceparent of the turn's parent (the caller's, or a synthetic root), stored with its row. */
  traceParent: string;
}

/**
 * Where the session's turns stand beyond what their charts hold (plain data only): input waiting
 * to be written, rows still to close, outcomes and who waits for them, reads started ahead, audit
 * times, a hold. Promises, signals and callbacks live here, so chart context stays inspectable.
 */
export interface TurnBookkeeping {
  /** Inputs of accepted turns whose first write has not happened yet. */
  readonly preparedInputs: Map<string, PreparedInput>;
  /** The turn whose row is written and not yet closed: only such a row needs a terminal status. */
  openTurnRow: string | null;
  /** A terminal status whose write failed: retried before the next turn's first write. */
  unclosedTurn: { turnId: string; end: TurnEnd } | null;
  readonly outcomes: Map<string, TurnOutcome>;
  /** What each running turn's model calls reported so far: usage, finish reason (memory only). */
  readonly turnMeters: Map<string, TurnMeter>;
  readonly waiters: Map<string, ((outcome: WaitResult) => void)[]>;
  /** Per accepted turn: settles once its input is durable (turn row and user message, or its queued row). */
  readonly stored: DurableSignals;
  /** The run id of each turn this session accepted or loaded (RL-1). */
  readonly runs: Map<string, string>;
  /** Reads started ahead of their tool-call charts (RL-5), by call id, until a chart takes each over. */
  readonly startedReads: Map<string, StartedRead>;
  /** Issue 30: the running turn's bound on calls started as their approval batch cleared them. */
  callSlots: CallSlots | null;
  /** The storage write cancelling a queued turn, awaited by the command that cancelled it. */
  readonly cancelWrites: Map<string, Promise<void>>;
  /** What each tool call's audit row needs that its chart does not hold: how long it waited and ran (RL-4). */
  readonly audits: CallAudits;
  /**
   * The registry tool each running call resolved as it started, by call id, until its result is
   * written: a call keeps its tool though a tool source drops or replaces it meanwhile (issue 24).
   */
  readonly callTools: Map<string, AnyTool>;
  /** Issue 27: what a call's span end reports (its permission decision and wait), from its result's write to its end. */
  readonly callSpanFacts: Map<string, SpanFacts>;
  /** A hold asked for: turns wait at their next checkpoint (before a model call) until it is released. */
  hold: HoldGate | null;
  /**
   * Issue 26: when each approval of the running turn expires (null: never), by call id, from its first
   * request (loaded for a resumed turn): an approval's expiry counts across restarts.
   */
  readonly approvalExpiries: Map<string, number | null>;
  /** Issue 26: the storage write of each approval request, by call id: its answer's write follows it. */
  readonly approvalRequests: Map<string, Promise<void>>;
  /** Issue 26: the storage write of each answer the session took, awaited by the command that gave it. */
  readonly answerWrites: Map<string, Promise<void>>;
  /** Issue 26: the turn a departed host left, to go on with as the session opens; null once begun. */
  resumed: ResumedTurnRecord | null;
  /** Issue 26: the resumed turn whose span (`turn:<id>:resumed`) is open. */
  resumedSpan: string | null;
}

/** Issue 26: what storage has of a turn to resume. */
interface ResumedTurnRecord {
  turnId: string;
  /** The messages the turn wrote, in order. */
  messages: readonly StoredMessage[];
  /** Calls whose approval was asked for and not answered, denied, or allowed without a stored start: they had not run. */
  notRun: ReadonlySet<string>;
  /** Calls that asked for an approval. */
  asked: ReadonlySet<string>;
  /** The first update sequence this owner issues: where the turn's continuation starts. */
  fromSequence: number;
  /** Why the turn goes on here (issue 26), for its span (issue 27). */
  reason: string;
  /** Issue 27: the traceparent stored with the turn, so its resumed span is of the same trace; null for a turn stored before 011. */
  traceParent: string | null;
}

/**
 * The bookkeeping of a session as it opens: the run ids of its stored turns, and its queued turns
 * ready to start — their input is stored already, so each is durable from the start.
 */
export function createTurnBookkeeping(runs: Map<string, string>, queued: readonly QueuedTurnRow[]): TurnBookkeeping {
  const turns: TurnBookkeeping = {
    preparedInputs: new Map(),
    openTurnRow: null,
    unclosedTurn: null,
    outcomes: new Map(),
    turnMeters: new Map(),
    waiters: new Map(),
    stored: new DurableSignals(),
    runs,
    startedReads: new Map(),
    callSlots: null,
    cancelWrites: new Map(),
    audits: new CallAudits(),
    callTools: new Map(),
    callSpanFacts: new Map(),
    hold: null,
    approvalExpiries: new Map(),
    approvalRequests: new Map(),
    answerWrites: new Map(),
    resumed: null,
    resumedSpan: null,
  };
  for (const q of queued) {
    // A row queued before 011 has no traceparent: the turn gets a root of its own as it starts here (not stored: its row exists).
    const traceParent = q.traceParent ?? newTraceParent();
    turns.preparedInputs.set(q.id, { clientRequestId: q.clientRequestId, messages: q.input, runId: q.runId, trigger: q.trigger, fromQueue: true, traceParent });
    turns.stored.settle(q.id);
  }
  return turns;
}

/** A hold on the session's turns; `release` lets the turn waiting at it go on. */
export interface HoldGate {
  readonly released: Promise<void>;
  release(): void;
}

export function holdGate(): HoldGate {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return { released, release };
}

/**
 * When an accepted turn's input became durable: the service acknowledges a turn only then (RL-1),
 * while the in-process `startTurn` answers before anything is written (RT-1).
 */
class DurableSignals {
  private readonly signals = new Map<string, { promise: Promise<void>; settle: (error?: unknown) => void }>();

  /** Settles when the turn's input is stored; rejects with the write's error. */
  wait(turnId: string): Promise<void> {
    return this.entry(turnId).promise;
  }

  /**
   * Ties the turn's durability to a write already under way. The signal is taken now: a waiter
   * that forgets the turn before the write ends (a queued turn cancelled at once) still hears it.
   */
  follow(turnId: string, write: Promise<void>): void {
    const { settle } = this.entry(turnId);
    write.then(
      () => settle(),
      (error: unknown) => settle(error),
    );
  }

  settle(turnId: string, error?: unknown): void {
    this.entry(turnId).settle(error);
  }

  forget(turnId: string): void {
    this.signals.delete(turnId);
  }

  private entry(turnId: string) {
    let entry = this.signals.get(turnId);
    if (!entry) {
      let settle!: (error?: unknown) => void;
      const promise = new Promise<void>((resolve, reject) => {
        settle = (error) => (error === undefined ? resolve() : reject(error instanceof Error ? error : new Error(String(error))));
      });
      // Nobody may ever wait (the in-process startTurn does not): a failed write is the turn's outcome, not an unhandled rejection.
      promise.catch(() => undefined);
      entry = { promise, settle };
      this.signals.set(turnId, entry);
    }
    return entry;
  }
}
