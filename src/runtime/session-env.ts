import type { AgentLink, SessionStorage, TurnEnd } from '../../storage/session-storage.js';
import type { ChatMessage, StoredMessage } from '../protocol/messages.js';
import type { SystemPart, ToolDefinition } from '../protocol/model.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { SessionUpdate } from '../protocol/updates.js';
import type { TurnMeter } from './turn-meter.js';
import type { PreparedModelCall } from '../context/engine.js';
import type { WorldStateBaseline } from '../context/world-state/types.js';
import type { SkillsConfig } from '../skills/types.js';
import type { ModelPort } from '../protocol/model.js';
import type { AgentDefinition } from './agents.js';
import type { ChatState } from './chat-state.js';
import type { LiveView } from './live-view.js';
import type { UpdateStream } from './update-stream.js';
import type { StartedRead } from './parallel-reads.js';
import type { ResolvedHooks } from './hooks.js';
import type { CallAudits } from './call-audits.js';
import type { ChartClock } from './chart-clock.js';
import type { ToolAudit } from '../protocol/audit.js';
import type { BusyPolicy, PermissionMode, TriggerType } from '../protocol/commands.js';

/** A user message prepared before acceptance: skill snapshots first, then the user's text. */
interface PreparedInput {
  clientRequestId: string;
  messages: ChatMessage[];
  /** The run record written with the turn (RL-1). */
  runId: string;
  trigger: TriggerType;
  /** Stored `queued` first (RL-2): starting it moves that row to running. */
  fromQueue: boolean;
}

interface AgentMessage {
  from: string;
  text: string;
}

/**
 * Everything one session's effects need, looked up by session id so machine context stays
 * plain data (serializable for inspection) and the provided machines are shared by all sessions.
 */
export interface SessionEnv {
  readonly id: string;
  /** The session's agent; agent.switch replaces these four while no turn runs (a turn keeps the agent it started with). */
  agentName: string;
  agent: AgentDefinition;
  /** RL-4: the runtime's hooks, then the agent's, per stage. */
  hooks: ResolvedHooks;
  /** The tool surface the agent's model sees (the delegation tools only when the agent may delegate). */
  tools: readonly ToolDefinition[];
  /** A sub-agent's session: what started it. */
  readonly parent: AgentLink | null;
  /** Nobody can answer an approval here (every sub-agent's session): a call that would ask is a rule denial. */
  readonly nonInteractive: boolean;
  permissionMode: PermissionMode;
  readonly workspaceDir: string | null;
  readonly busyPolicy: BusyPolicy;
  /** The fencing token this runtime holds for the session: every write carries it. */
  readonly fence: number;
  /** Replaced whole when a compaction or rewind installs a new conversation. */
  chat: ChatState;
  readonly live: LiveView;
  readonly updates: UpdateStream;
  /** RT-4: agent messages waiting for the next model call; memory only. */
  readonly mailbox: AgentMessage[];
  /** Inputs of accepted turns whose first write has not happened yet. */
  readonly preparedInputs: Map<string, PreparedInput>;
  /** System context of the running turn, resolved once per turn (RT-10). */
  turnSystem: readonly SystemPart[];
  /** Sequence of the running turn's first message: the prune watermark moves up to it (CW-4). */
  turnStartSequence: number;
  /** The request prepared for the next model call, built once per call (CW-1). */
  prepared: PreparedModelCall | null;
  /** What world state was last sent, per section (memory only, CW-2). */
  baseline: WorldStateBaseline;
  /** The conversation the baseline was taken against: a compaction, rewind or reload replaces it. */
  baselineChat: ChatState | null;
  /** The turn whose row is written and not yet closed: only such a row needs a terminal status. */
  openTurnRow: string | null;
  /** A terminal status whose write failed: retried before the next turn's first write. */
  unclosedTurn: { turnId: string; end: TurnEnd } | null;
  readonly outcomes: Map<string, TurnOutcome>;
  /** What each running turn's model calls reported so far: usage, finish reason (memory only). */
  readonly turnMeters: Map<string, TurnMeter>;
  readonly waiters: Map<string, ((outcome: TurnOutcome) => void)[]>;
  /** Per accepted turn: settles once its input is durable (turn row and user message, or its queued row). */
  readonly stored: DurableSignals;
  /** The run id of each turn this session accepted or loaded (RL-1). */
  readonly runs: Map<string, string>;
  /** Reads started ahead of their tool-call charts (RL-5), by call id, until a chart takes each over. */
  readonly startedReads: Map<string, StartedRead>;
  /** The storage write cancelling a queued turn, awaited by the command that cancelled it. */
  readonly cancelWrites: Map<string, Promise<void>>;
  /** What each tool call's audit row needs that its chart does not hold: how long it waited and ran (RL-4). */
  readonly audits: CallAudits;
  /** A hold asked for: turns wait at their next checkpoint (before a model call) until it is released. */
  hold: HoldGate | null;
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
export class DurableSignals {
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

export interface RuntimeServices {
  storage: SessionStorage;
  now: () => number;
  newId: (prefix: string) => string;
}

/** What every effect of every session shares. */
export interface RuntimeDeps extends RuntimeServices {
  env: (sessionId: string) => SessionEnv;
  model: ModelPort;
  skills: SkillsConfig | null;
  /** Where non-fatal notes go (skill scan warnings): never into the model's context. */
  warn: (message: string) => void;
  /** The charts' clock: hooks' time limits run on it (RL-4). */
  clock: ChartClock;
}

/** The single write path of RT-10/RT-12: check with chat state, write, then append. */
export async function persistAndAppend(
  env: SessionEnv,
  services: RuntimeServices,
  turnId: string,
  message: ChatMessage,
  id: string = services.newId('msg'),
  /** A tool result's audit row, written in the same transaction (RL-4). */
  audit?: ToolAudit,
): Promise<StoredMessage> {
  env.chat.check(message);
  const stored: StoredMessage = {
    id,
    sessionId: env.id,
    turnId,
    sequence: env.chat.nextSequence,
    createdAtMs: services.now(),
    message,
  };
  await (audit ? services.storage.appendMessage(stored, env.fence, audit) : services.storage.appendMessage(stored, env.fence));
  env.chat.append(stored, true);
  return stored;
}

export function emit(env: SessionEnv, turnId: string, update: SessionUpdate): void {
  env.updates.emit(turnId, update);
}
