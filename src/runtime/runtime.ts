import { orderedUuid } from './ordered-id.js';
import { resolve } from 'node:path';
import { Subject, type Observable } from 'rxjs';
import { createActor, type AnyActorRef, type InspectionEvent } from 'xstate';
import { REAL_CLOCK, type ChartClock } from './chart-clock.js';
import { z } from 'zod';
import type { AgentLink, CorrectionReport, QueuedTurnRow, SessionRow, SessionStorage } from '../../storage/session-storage.js';
import { FRESH_TRACKERS, type GuardrailTrackers } from '../../machines/guardrails.js';
import { auditPageSchema, createSessionSchema, embedSessionSchema, sessionIdSchema, type CreateSessionOptions } from '../protocol/commands.js';
import { persistenceError, SessionOwnedElsewhereError, TurnchartError } from '../protocol/errors.js';
import type { ModelPort } from '../protocol/model.js';
import { previewContextWindow, type ContextWindowPreview } from '../context/preview.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { AuditLog, AuditPage } from '../protocol/audit.js';
import type { AnyTool } from '../tools/define-tool.js';
import { Toolset } from '../tools/toolset.js';
import type { SkillsConfig } from '../skills/types.js';
import { hooksSchema, resolveHooks, type Hooks, type ResolvedHooks } from './hooks.js';
import { CallAudits } from './call-audits.js';
import { reportProgress } from './watchdog-progress.js';
import { agentNamed, checkSystemContexts, limitsOf, resolveAgents, type AgentConfig, type AgentDefinition } from './agents.js';
import { ChatState, ChatStateError } from './chat-state.js';
import { IdleReaper } from './idle-reaper.js';
import { isolated } from './isolated-observable.js';
import { loadConversation } from './load-conversation.js';
import { LiveView } from './live-view.js';
import { DEFAULT_LEASE_TTL_MS, Ownership } from './ownership.js';
import { provideMachines, type ProvidedSessionMachine } from './provided-machines.js';
import { SessionHandle, type SessionLifecycle } from './session-handle.js';
import { createSessionLogic, type SessionLogic } from './session-logic.js';
import { DurableSignals, type RuntimeServices, type SessionEnv } from './session-env.js';
import { TRACE_BATCH_MS, TRACE_QUEUE_CAPACITY, TRACE_SIGNALS_PER_SESSION, TraceRecorder } from './trace-recorder.js';
import { Delegation } from './delegation.js';
import { SEQUENCE_BLOCK, UpdateStream } from './update-stream.js';
import { messageOf } from '../util/errors.js';

export type { ChartClock };

export interface RuntimeOptions {
  storage: SessionStorage;
  model: ModelPort;
  tools?: AnyTool[];
  agents?: Record<string, AgentConfig>;
  /** XState inspection observer for every actor of every session (e.g. `@statelyai/inspect`). */
  inspect?: (event: InspectionEvent) => void;
  /** Clock for stored and streamed timestamps; tests may fix it. */
  now?: () => number;
  /** The clock the charts' timers run on (a run's time limit); XState's `SimulatedClock` in tests. */
  clock?: ChartClock;
  /** Capacity of the trace queue before signals are dropped (RT-26); default 1 024, or 64 per open session when that is more. A number set here stays fixed. */
  traceQueueCapacity?: number;
  /** A skills directory: its catalog is world state, its skills can be picked as turn input (RT-1, CW-2). */
  skills?: SkillsConfig;
  /** Where non-fatal notes go (e.g. a skill folder without SKILL.md, a subscriber that threw); default `console.warn`. */
  warn?: (message: string) => void;
  /**
   * Close a session after this long (ms) with no turn running or queued and no update subscriber;
   * it reopens from storage on its next use. Default: sessions stay open until closed.
   */
  idleTtlMs?: number;
  /** Ownership of sessions across runtimes on one database: lease length and identity. */
  ownership?: { leaseTtlMs?: number; ownerId?: string; host?: string };
  /** Update sequences reserved in storage at a time (see `SequenceReservation`); for tests. */
  sequenceBlock?: number;
  /** RL-4: hooks around context build and tool dispatch for every session; an agent's own `hooks` run after these. */
  hooks?: Hooks;
}

const optionsSchema = z.object({
  storage: z.custom<SessionStorage>((v) => typeof (v as SessionStorage | null)?.beginTurn === 'function', 'a SessionStorage'),
  model: z.custom<ModelPort>((v) => typeof (v as ModelPort | null)?.stream === 'function', 'a ModelPort'),
  tools: z.array(z.custom<AnyTool>((v) => typeof (v as AnyTool | null)?.execute === 'function', 'a tool from defineTool')).optional(),
  agents: z.record(z.string(), z.unknown()).optional(),
  inspect: z.function().optional(),
  now: z.function().optional(),
  clock: z.custom<ChartClock>((v) => typeof (v as ChartClock | null)?.setTimeout === 'function', 'an XState Clock').optional(),
  traceQueueCapacity: z.number().int().min(1).optional(),
  skills: z.object({ dir: z.string().min(1), disabled: z.array(z.string()).optional() }).optional(),
  warn: z.function().optional(),
  idleTtlMs: z.number().int().min(0).max(2_147_483_647).optional(),
  ownership: z
    .object({
      leaseTtlMs: z.number().int().min(100).max(86_400_000).optional(),
      ownerId: z.string().min(1).max(200).optional(),
      host: z.string().min(1).max(255).optional(),
    })
    .optional(),
  sequenceBlock: z.number().int().min(2).max(1_000_000_000).optional(),
  hooks: hooksSchema.optional(),
});

interface OpenSession {
  handle: SessionHandle;
  env: SessionEnv;
}

/** What opening a session reads from storage before its actor starts. */
interface Loaded {
  row: SessionRow;
  fence: number;
  chat: ChatState;
  plan: SessionEnv['live']['plan'];
  accepted: Record<string, string>;
  runs: Map<string, string>;
  queued: QueuedTurnRow[];
  /** GR-2a: the guardrail trackers the session's last ended turn stored. */
  trackers: GuardrailTrackers;
}

/**
 * The runtime (000 §1): owns the open sessions of one process. Creating it migrates the storage
 * and runs the startup correction (RT-24) before any session can start a turn; each open session
 * is held under a lease, so one session has one owner even when several processes share a database.
 */
export class Runtime {
  private readonly sessions = new Map<string, OpenSession>();
  private readonly opening = new Map<string, Promise<SessionHandle>>();
  private readonly runtimeSubject = new Subject<UpdateEnvelope>();
  private readonly closedSubject = new Subject<string>();
  readonly updates$: Observable<UpdateEnvelope>;
  /** The id of each session as it closes (stopped, evicted when idle, lost to another owner, shut down). */
  readonly sessionClosed$: Observable<string> = this.closedSubject.asObservable();
  private readonly machine: ProvidedSessionMachine;
  private readonly services: RuntimeServices;
  private stopping: Promise<void> | null = null;
  private readonly skills: SkillsConfig | null;
  private readonly reaper: IdleReaper;
  private readonly warn: (message: string) => void;
  private readonly sequenceBlock: number;
  /** Sessions an actor of a host machine holds through `sessionLogic`: one actor per session. */
  private readonly embedded = new Map<string, SessionHandle | null>();
  /**
   * The session as XState logic for a host's own machine: `invoke` or `spawnChild` it with input
   * `{ sessionId?, agent?, permissionMode?, workspaceDir?, busyPolicy?, notifyParent? }`, send it
   * `session.*` commands, hear `update` / `reply` / `opened` with `.on()`, and with `notifyParent`
   * receive `turnchart.*` events. The session is persisted, sequenced and leased exactly as through
   * a `SessionHandle`; stopping the actor closes it. See README, "Embed a session in your own statechart".
   */
  readonly sessionLogic: SessionLogic;
  /** Each agent's hooks, the runtime's first (RL-4), resolved once per agent. */
  private readonly hooksByAgent = new Map<string, ResolvedHooks>();
  /** Sub-agents: which session started which, and the work behind the delegation tools. */
  private readonly delegation: Delegation;
  /** Whether any agent has a no-progress watchdog: only then does every update report progress. */
  private readonly watchesProgress: boolean;
  private readonly lifecycle: SessionLifecycle = {
    closed: (handle) => this.release(handle),
    stopping: () => this.stopping !== null,
    changed: (handle) => this.checkIdle(handle.id),
    agent: (name) => agentNamed(this.agents, name),
  };

  constructor(
    private readonly options: RuntimeOptions,
    private readonly agents: Record<string, AgentDefinition>,
    private readonly trace: TraceRecorder,
    private readonly toolset: Toolset,
    readonly ownership: Ownership,
    /** What the startup correction changed. */
    readonly correction: CorrectionReport,
  ) {
    const now = options.now ?? Date.now;
    this.warn = options.warn ?? ((message) => console.warn(`turnchart: ${message}`));
    this.sequenceBlock = options.sequenceBlock ?? SEQUENCE_BLOCK;
    this.skills = options.skills ? { dir: resolve(options.skills.dir), disabled: options.skills.disabled ?? [] } : null;
    this.services = { storage: options.storage, now, newId: (prefix) => `${prefix}_${orderedUuid()}` };
    this.updates$ = isolated(this.runtimeSubject, { onError: (error) => this.warn(`an update subscriber threw: ${messageOf(error)}`) });
    this.reaper = new IdleReaper(options.idleTtlMs ?? null, (id) => void this.evict(id));
    this.watchesProgress = Object.values(agents).some((agent) => agent.guardrails.stallTimeoutMs !== null);
    this.delegation = new Delegation({
      storage: options.storage,
      createChild: (parentId, agent, link) => this.createChildSession(parentId, agent, link),
      open: (id) => this.openSession(id),
      openHandle: (id) => this.openHandle(id),
      clock: options.clock ?? REAL_CLOCK,
      warn: this.warn,
    });
    this.machine = provideMachines({
      delegation: this.delegation,
      installAgent: (env, name) => this.installAgent(env, name),
      ...this.services,
      env: (id) => this.envOf(id),
      model: options.model,
      toolset,
      trace,
      skills: this.skills,
      warn: this.warn,
      clock: options.clock ?? REAL_CLOCK,
    });
    this.sessionLogic = createSessionLogic(
      {
        open: (input) => this.embed(input),
        release: (handle) => this.unembed(handle),
        held: (id) => this.embedded.get(id) ?? undefined,
        conversation: (id) => this.sessions.get(id)?.env.chat.conversation() ?? [],
      },
      this.warn,
    );
    ownership.startRenewing(
      () => [...this.sessions.keys()],
      (id) => this.lose(id),
      (error) => this.warn(`could not renew session leases: ${messageOf(error)}`),
    );
  }

  /** Trace signals lost to a full queue or a failing write (RT-26). */
  get droppedSignals(): number {
    return this.trace.droppedSignals;
  }

  /** Sessions open in this runtime right now. */
  get openSessionCount(): number {
    return this.sessions.size;
  }

  /** Whether the session is open in this runtime (not closed, not evicted). */
  isOpen(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /** The open session's handle without touching storage; undefined when it is not open here. */
  openHandle(sessionId: string): SessionHandle | undefined {
    return this.sessions.get(sessionId)?.handle;
  }

  /**
   * CW-9: a read-only preview of the next request, built by the same `prepare` from the session's
   * current conversation — without sampling world state and without calling the model.
   */
  async inspectContextWindow(sessionId: string): Promise<ContextWindowPreview> {
    const { env } = this.sessions.get(sessionId) ?? (await this.openSession(sessionId), this.sessions.get(sessionId)!);
    return previewContextWindow({ systemPrompt: env.agent.systemPrompt, conversation: env.chat.view(), watermark: env.chat.watermark }, env.tools, this.options.model.capabilities);
  }

  /**
   * RL-4: the session's tool dispatch audit, newest first — one row per tool result, written with
   * it. `before` is the `nextBefore` of the previous page. Reads storage only; the session need not be open.
   */
  async auditLog(sessionId: string, page: AuditPage = {}): Promise<AuditLog> {
    const id = sessionIdSchema.safeParse(sessionId);
    if (!id.success) throw new TurnchartError('InvalidInput', z.prettifyError(id.error));
    const query = auditPageSchema.safeParse(page);
    if (!query.success) throw new TurnchartError('InvalidInput', z.prettifyError(query.error));
    const { limit, before } = query.data;
    const storage = this.options.storage;
    const [row, entries] = await Promise.all([storage.getSession(id.data), storage.listAudit(id.data, { limit, ...(before !== undefined && { before }) })]).catch(
      (error: unknown) => {
        throw persistenceError(error);
      },
    );
    if (!row) throw new TurnchartError('UnknownSession', `no session '${id.data}'`);
    return { entries, nextBefore: entries.length === limit ? entries.at(-1)!.sequence : null };
  }

  /** Resolves once every trace signal queued so far is written or dropped. */
  flushTrace(): Promise<void> {
    return this.trace.flush();
  }

  /**
   * Sub-agents: the session that started this one (`parent`, with the turn and the `spawn_agent`
   * call) and the sessions this one started (`children`, oldest first), read from storage.
   */
  async agentLinks(sessionId: string): Promise<{ parent: AgentLink | null; children: { sessionId: string; agent: string; link: AgentLink }[] }> {
    const id = sessionIdSchema.safeParse(sessionId);
    if (!id.success) throw new TurnchartError('InvalidInput', z.prettifyError(id.error));
    const storage = this.options.storage;
    const [row, children] = await Promise.all([storage.getSession(id.data), storage.listChildSessions(id.data)]).catch((error: unknown) => {
      throw persistenceError(error);
    });
    if (!row) throw new TurnchartError('UnknownSession', `no session '${id.data}'`);
    return {
      parent: row.parent ?? null,
      children: children.map((child) => ({ sessionId: child.id, agent: child.agent, link: child.parent! })),
    };
  }

  /** A new session, held by this runtime; with an `id`, under that id (`SessionExists` when it is taken). */
  async createSession(options: CreateSessionOptions = {}): Promise<SessionHandle> {
    this.assertRunning();
    const parsed = createSessionSchema.safeParse(options);
    if (!parsed.success) throw new TurnchartError('InvalidInput', z.prettifyError(parsed.error));
    return this.createParsed(parsed.data);
  }

  /** A sub-agent's session: the parent's mode and workspace, linked to the `spawn_agent` call in the same insert. */
  private async createChildSession(parentId: string, agent: string, link: AgentLink): Promise<SessionHandle> {
    this.assertRunning();
    const parent = this.envOf(parentId);
    const parsed = createSessionSchema.parse({
      agent,
      permissionMode: parent.permissionMode,
      nonInteractive: true,
      ...(parent.workspaceDir !== null && { workspaceDir: parent.workspaceDir }),
    });
    return this.createParsed(parsed, link);
  }

  private async createParsed(data: ReturnType<typeof createSessionSchema.parse>, parentLink?: AgentLink): Promise<SessionHandle> {
    const parsed = { data };
    if (!agentNamed(this.agents, parsed.data.agent)) throw new TurnchartError('UnknownAgent', `no agent named '${parsed.data.agent}'`);
    if (parsed.data.id !== undefined && (await this.sessionExists(parsed.data.id))) throw sessionTaken(parsed.data.id);
    const row: SessionRow = {
      id: parsed.data.id ?? this.services.newId('ses'),
      agent: parsed.data.agent,
      permissionMode: parsed.data.permissionMode,
      workspaceDir: parsed.data.workspaceDir === undefined ? null : resolve(parsed.data.workspaceDir),
      createdAtMs: this.services.now(),
      busyPolicy: parsed.data.busyPolicy,
      updateSequence: this.sequenceBlock,
      ...(parentLink && { parent: parentLink }),
      ...(parsed.data.nonInteractive && { nonInteractive: true }),
    };
    const fence = await this.options.storage.createSession(row, this.ownership.lease).catch(async (error: unknown) => {
      // Named by the caller, the id may have been taken since the check: the insert's key violation says so.
      if (parsed.data.id !== undefined && (await this.sessionExists(row.id).catch(() => false))) throw sessionTaken(row.id);
      throw persistenceError(error);
    });
    return this.start({ row: { ...row, updateSequence: 0 }, fence, chat: new ChatState(), plan: null, accepted: {}, runs: new Map(), queued: [], trackers: FRESH_TRACKERS });
  }

  private async sessionExists(id: string): Promise<boolean> {
    try {
      return (await this.options.storage.getSession(id)) !== undefined;
    } catch (error) {
      throw persistenceError(error);
    }
  }

  /**
   * Opens a stored session: takes its lease (`SessionOwnedElsewhere` while another runtime holds
   * it), corrects what a departed owner left running, loads the conversation and starts its queued
   * turns; nothing that ran is resumed (RT-24). An open session is returned as it is.
   */
  async openSession(sessionId: string): Promise<SessionHandle> {
    this.assertRunning();
    const id = sessionIdSchema.safeParse(sessionId);
    if (!id.success) throw new TurnchartError('InvalidInput', z.prettifyError(id.error));
    const open = this.sessions.get(id.data);
    if (open) return open.handle;
    // Two requests opening one session share one opening: a second lease would fence off the first.
    let opening = this.opening.get(id.data);
    if (!opening) {
      opening = this.load(id.data).then(
        (loaded) => this.start(loaded),
        (error: unknown) => {
          throw persistenceError(error);
        },
      );
      this.opening.set(id.data, opening);
      void opening.finally(() => this.opening.delete(id.data)).catch(() => undefined);
    }
    return opening;
  }

  /**
   * Opens a session for an actor of a host machine (`sessionLogic`): a new one, or a stored one
   * under this runtime's lease as `openSession` does. The actor hears the updates issued since the
   * session opened here — or, for one that was already open, from now on.
   */
  private async embed(input: unknown): Promise<{ handle: SessionHandle; afterSequence: number }> {
    this.assertRunning();
    const parsed = embedSessionSchema.safeParse(input);
    if (!parsed.success) throw new TurnchartError('InvalidInput', z.prettifyError(parsed.error));
    const { sessionId, notifyParent: _notifyParent, ...options } = parsed.data;
    if (sessionId === undefined) return this.holdEmbedded(await this.createSession(options), false);
    // An actor that embedded the session and was just stopped is still closing it: open it anew after that.
    const closing = this.sessions.get(sessionId)?.handle;
    if (closing && !closing.isOpen && !this.embedded.has(sessionId)) await closing.close();
    if (this.embedded.has(sessionId)) throw new TurnchartError('SessionEmbedded', `session '${sessionId}' is already embedded in another actor`);
    this.embedded.set(sessionId, null);
    try {
      const wasOpen = this.sessions.has(sessionId);
      return this.holdEmbedded(await this.openSession(sessionId), wasOpen);
    } catch (error) {
      this.embedded.delete(sessionId);
      throw error;
    }
  }

  private holdEmbedded(handle: SessionHandle, wasOpen: boolean): { handle: SessionHandle; afterSequence: number } {
    const open = this.sessions.get(handle.id);
    if (open?.handle !== handle || !handle.isOpen) {
      this.embedded.delete(handle.id);
      throw new TurnchartError('SessionClosed', `session '${handle.id}' closed while it was being embedded`);
    }
    this.embedded.set(handle.id, handle);
    const updates = open.env.updates;
    return { handle, afterSequence: wasOpen ? updates.lastSequence : updates.openedAfter };
  }

  /** The embedding actor stopped (or its session closed): the session closes as `session.close()` closes it. */
  private unembed(handle: SessionHandle): void {
    if (this.embedded.get(handle.id) === handle) this.embedded.delete(handle.id);
    handle.close().catch((error: unknown) => this.warn(`could not close embedded session ${handle.id}: ${messageOf(error)}`));
  }

  /** Stops every session (running turns end `actor_stopped`), flushes the trace, closes storage. */
  async shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.allSettled([...this.opening.values()]);
      await Promise.all([...this.sessions.values()].map(({ handle }) => handle.close()));
      this.ownership.stop();
      this.reaper.stop();
      await this.trace.flush();
      this.runtimeSubject.complete();
      this.closedSubject.complete();
      await this.options.storage.close();
    })();
    return this.stopping;
  }

  /** Opens the sessions whose queued turns nobody is running (after a restart, or their owner left). */
  async startQueuedSessions(): Promise<void> {
    for (const id of await this.options.storage.unheldSessionsWithQueuedTurns()) {
      await this.openSession(id).catch((error: unknown) => this.warn(`could not resume the queue of session ${id}: ${messageOf(error)}`));
    }
  }

  private async load(sessionId: string): Promise<Loaded> {
    const storage = this.options.storage;
    const acquired = await this.ownership.acquire(sessionId, this.sequenceBlock);
    if (!acquired.ok) {
      if (acquired.reason === 'unknown') throw new TurnchartError('UnknownSession', `no session '${sessionId}'`);
      throw new SessionOwnedElsewhereError(sessionId, acquired.holder);
    }
    const [{ chat, plan }, turns, queued] = await Promise.all([
      loadConversation(storage, sessionId).catch((error: unknown) => {
        throw error instanceof ChatStateError ? new TurnchartError(error.reason, error.message) : error;
      }),
      storage.listTurns(sessionId),
      storage.listQueuedTurns(sessionId),
    ]).catch(async (error: unknown) => {
      await storage.releaseSession(sessionId, this.ownership.identity.ownerId, acquired.session.updateSequence ?? 0).catch(() => undefined);
      throw error;
    });
    const accepted: Record<string, string> = Object.create(null) as Record<string, string>;
    const runs = new Map<string, string>();
    // Turns come in start order and run one at a time: the last one that stored trackers left the session's (GR-2a).
    let trackers = FRESH_TRACKERS;
    for (const turn of turns) {
      accepted[turn.clientRequestId] = turn.id;
      if (turn.runId) runs.set(turn.id, turn.runId);
      if (turn.trackers) trackers = turn.trackers;
    }
    return { row: acquired.session, fence: acquired.fence, chat, plan, accepted, runs, queued, trackers };
  }

  private start(loaded: Loaded): SessionHandle {
    const { row, fence, queued } = loaded;
    const agent = agentNamed(this.agents, row.agent) ?? this.agents.default!;
    const live = new LiveView(loaded.plan, queued.map((q) => ({ turnId: q.id, clientRequestId: q.clientRequestId })));
    const start = row.updateSequence ?? 0;
    // The session actor exists only below; the watchdog's progress reports find it through this.
    const sessionActor: { ref: AnyActorRef | null } = { ref: null };
    const env: SessionEnv = {
      id: row.id,
      agentName: row.agent,
      agent,
      hooks: this.hooksOf(row.agent, agent),
      tools: this.toolset.surfaceFor(agent),
      parent: row.parent ?? null,
      nonInteractive: row.nonInteractive === true,
      permissionMode: row.permissionMode,
      workspaceDir: row.workspaceDir,
      busyPolicy: row.busyPolicy ?? 'reject',
      fence,
      chat: loaded.chat,
      live,
      updates: new UpdateStream(row.id, live, this.runtimeSubject, this.services.now, {
        sequences: {
          start,
          reserved: start + this.sequenceBlock,
          block: this.sequenceBlock,
          reserve: (upTo) => this.options.storage.reserveUpdateSequence(row.id, upTo, fence),
        },
        onSubscriberError: (error) => this.warn(`an update subscriber of session ${row.id} threw: ${messageOf(error)}`),
        onSubscribers: () => this.checkIdle(row.id),
        // The agent may change (agent.switch), so the check is per update, and only when some agent watches.
        ...(this.watchesProgress && { onEmit: () => env.agent.guardrails.stallTimeoutMs !== null && reportProgress(sessionActor.ref) }),
      }),
      mailbox: [],
      preparedInputs: new Map(),
      turnSystem: [],
      turnStartSequence: 0,
      prepared: null,
      baseline: new Map(),
      baselineChat: null,
      openTurnRow: null,
      unclosedTurn: null,
      outcomes: new Map(),
      turnMeters: new Map(),
      waiters: new Map(),
      stored: new DurableSignals(),
      runs: loaded.runs,
      startedReads: new Map(),
      cancelWrites: new Map(),
      audits: new CallAudits(),
      hold: null,
    };
    for (const q of queued) {
      env.preparedInputs.set(q.id, { clientRequestId: q.clientRequestId, messages: q.input, runId: q.runId, trigger: q.trigger, fromQueue: true });
      env.stored.settle(q.id);
    }
    const actor = createActor(this.machine, {
      input: {
        sessionId: row.id,
        limits: limitsOf(agent),
        accepted: loaded.accepted,
        reloadRequired: false,
        busyPolicy: env.busyPolicy,
        queue: live.queue,
        trackers: loaded.trackers,
      },
      inspect: this.options.inspect,
      ...(this.options.clock && { clock: this.options.clock }),
    });
    sessionActor.ref = actor;
    // An error inside a chart is a defect; observing it keeps it from becoming an unhandled crash.
    actor.subscribe({ error: (error) => console.error(`turnchart session ${row.id} failed:`, error) });
    const handle = new SessionHandle(row.id, actor, env, this.services, this.skills, this.lifecycle);
    this.sessions.set(row.id, { handle, env });
    this.trace.sessionsOpen(this.sessions.size);
    actor.subscribe(() => this.checkIdle(row.id));
    actor.start();
    this.checkIdle(row.id);
    return handle;
  }

  /** agent.switch, once stored: the next turn runs `name`'s prompt, limits, hooks, guardrails and tools. */
  private installAgent(env: SessionEnv, name: string): void {
    const agent = agentNamed(this.agents, name);
    if (!agent) throw new TurnchartError('UnknownAgent', `no agent named '${name}'`);
    env.agentName = name;
    env.agent = agent;
    env.hooks = this.hooksOf(name, agent);
    env.tools = this.toolset.surfaceFor(agent);
  }

  private hooksOf(name: string, agent: AgentDefinition): ResolvedHooks {
    let hooks = this.hooksByAgent.get(name);
    if (!hooks) {
      hooks = resolveHooks(this.options.hooks, agent.hooks);
      this.hooksByAgent.set(name, hooks);
    }
    return hooks;
  }

  /** Arms or disarms the session's idle timer from what it is doing now. */
  private checkIdle(sessionId: string): void {
    const open = this.sessions.get(sessionId);
    if (!open) return;
    const snapshot = open.handle.actor.getSnapshot();
    const idle =
      snapshot.status === 'active' &&
      snapshot.matches('idle') &&
      snapshot.context.queue.length === 0 &&
      open.env.updates.subscriberCount === 0 &&
      !open.handle.busy;
    this.reaper.update(sessionId, idle);
  }

  private async evict(sessionId: string): Promise<void> {
    const open = this.sessions.get(sessionId);
    if (!open || this.stopping) return;
    await open.handle.close();
  }

  /** Another owner took the session (our lease lapsed): stop it here without writing anything more. */
  private lose(sessionId: string): void {
    const open = this.sessions.get(sessionId);
    if (!open) return;
    this.warn(`session ${sessionId} is now held by another owner; closing it here`);
    this.sessions.delete(sessionId);
    this.trace.sessionsOpen(this.sessions.size);
    void open.handle.close();
  }

  /** The session's actor has stopped: it leaves the runtime and its lease is given up. */
  private async release(handle: SessionHandle): Promise<void> {
    const open = this.sessions.get(handle.id);
    this.reaper.forget(handle.id);
    if (open?.handle !== handle) return this.closedSubject.next(handle.id);
    this.sessions.delete(handle.id);
    this.trace.sessionsOpen(this.sessions.size);
    this.delegation.forget(handle.id);
    try {
      await this.options.storage.releaseSession(handle.id, this.ownership.identity.ownerId, open.env.updates.lastSequence, open.env.fence);
    } catch (error) {
      // The lease then simply runs out; nothing is lost.
      this.warn(`could not release session ${handle.id}: ${messageOf(error)}`);
    }
    this.closedSubject.next(handle.id);
  }

  private envOf(sessionId: string): SessionEnv {
    const entry = this.sessions.get(sessionId);
    if (!entry) throw new Error(`no open session '${sessionId}'`);
    return entry.env;
  }

  private assertRunning(): void {
    if (this.stopping) throw new TurnchartError('RuntimeStopped', 'the runtime has been shut down');
  }
}

function sessionTaken(id: string): TurnchartError {
  return new TurnchartError('SessionExists', `a session '${id}' exists already`);
}

export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw new TurnchartError('InvalidOptions', z.prettifyError(parsed.error));
  const toolset = new Toolset(options.tools ?? []);
  let agents: Record<string, AgentDefinition>;
  try {
    agents = resolveAgents(options.agents);
    checkSystemContexts(agents, (agent) => toolset.surfaceFor(agent));
  } catch (error) {
    throw new TurnchartError('InvalidOptions', error instanceof z.ZodError ? z.prettifyError(error) : messageOf(error));
  }
  const now = options.now ?? Date.now;
  await options.storage.migrate();
  const ownership = new Ownership(options.storage, {
    ttlMs: options.ownership?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    ...(options.ownership?.ownerId && { ownerId: options.ownership.ownerId }),
    ...(options.ownership?.host && { host: options.ownership.host }),
  });
  let correction: CorrectionReport;
  try {
    await ownership.reapGoneOwners();
    correction = await options.storage.correctInterrupted(now());
  } catch (error) {
    ownership.stop();
    throw error;
  }
  // A capacity the host chose is kept as it is; the default grows with the sessions held open.
  const trace =
    options.traceQueueCapacity === undefined
      ? new TraceRecorder(options.storage, TRACE_QUEUE_CAPACITY, TRACE_BATCH_MS, TRACE_SIGNALS_PER_SESSION)
      : new TraceRecorder(options.storage, options.traceQueueCapacity);
  const runtime = new Runtime(options, agents, trace, toolset, ownership, correction);
  await runtime.startQueuedSessions();
  return runtime;
}
