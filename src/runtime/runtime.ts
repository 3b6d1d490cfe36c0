import { orderedUuid } from './ordered-id.js';
import { resolve } from 'node:path';
import { Subject, type Observable } from 'rxjs';
import { createActor, type AnyActorRef } from 'xstate';
import { REAL_CLOCK, type ChartClock } from './chart-clock.js';
import { z } from 'zod';
import type { AgentLink, CorrectionReport, QueuedTurnRow, SessionRow, TurnRow } from '../../storage/session-storage.js';
import { FRESH_TRACKERS, type GuardrailTrackers } from '../../machines/guardrails.js';
import { createSessionSchema, sessionIdSchema, type CreateSessionOptions } from '../protocol/commands.js';
import { persistenceError, SessionOwnedElsewhereError, TurnchartError } from '../protocol/errors.js';
import type { Plan } from '../protocol/plan.js';
import { previewContextWindow, type ContextWindowPreview } from '../context/preview.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { AuditLog, AuditPage } from '../protocol/audit.js';
import type { Toolset, ToolsetAgent } from '../tools/toolset.js';
import { compilePermissionRules, type PermissionRuleSet } from '../tools/permission-rules.js';
import type { SkillsConfig } from '../skills/types.js';
import { resolveHooks, type ResolvedHooks } from './hooks.js';
import { reportProgress } from './watchdog-progress.js';
import { agentNamed, limitsOf, type AgentDefinition } from './agents.js';
import { ChatState, ChatStateError } from './chat-state.js';
import { IdleReaper } from './idle-reaper.js';
import { isolated } from './isolated-observable.js';
import { loadConversation } from './load-conversation.js';
import { DEFAULT_LEASE_TTL_MS, Ownership } from './ownership.js';
import { provideMachines, type ProvidedSessionMachine } from './provided-machines.js';
import { SessionHandle, type SessionLifecycle } from './session-handle.js';
import type { SessionLogic } from './session-logic.js';
import { createSessionEnv, type RuntimeServices, type SessionEnv } from './session-env.js';
import { installSessionAgent, type SessionAgent } from './session-config.js';
import { TRACE_BATCH_MS, TRACE_QUEUE_CAPACITY, TRACE_SIGNALS_PER_SESSION, TraceRecorder, type SpanObserver } from './trace-recorder.js';
import { Delegation } from './delegation.js';
import { SEQUENCE_BLOCK } from './update-stream.js';
import { checkRuntimeOptions, type RuntimeOptions } from './runtime-options.js';
import { Embedding } from './embedding.js';
import { agentLinks, auditLog, sessionExists, type AgentLinks } from './stored-queries.js';
import { messageOf } from '../protocol/error-message.js';
import type { Warn } from '../protocol/log-fields.js';
import type { StoredMessage } from '../protocol/messages.js';
import { storedEnding, turnToResume, type TurnToResume } from './turn-resumption.js';

export type { ChartClock, RuntimeOptions };

interface OpenSession {
  handle: SessionHandle;
  env: SessionEnv;
  /** Another owner took the session: it closes here without writing anything more. */
  lost: boolean;
}

/** What opening a session reads from storage before its actor starts. */
interface Loaded {
  row: SessionRow;
  fence: number;
  chat: ChatState;
  plan: Plan | null;
  accepted: Record<string, string>;
  runs: Map<string, string>;
  queued: QueuedTurnRow[];
  /** GR-2a: the guardrail trackers the session's last ended turn stored. */
  trackers: GuardrailTrackers;
  /** Issue 26: a turn its host left running, to go on with; null for none. */
  resume?: TurnToResume | null;
  /** Issue 26: the messages of the turn to resume. */
  resumeMessages?: readonly StoredMessage[];
}

/**
 * The runtime (000 §1): owns the open sessions of one process. Creating it migrates the storage
 * and runs the startup correction (RT-24) before any session can start a turn; each open session
 * is held under a lease, so one session has one owner even when several processes share a database.
 */
export class Runtime {
  private readonly sessions = new Map<string, OpenSession>();
  private takeovers = 0;
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
  private readonly warn: Warn;
  private readonly sequenceBlock: number;
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
  /** Each agent's permission rules, the runtime's under the agent's (issue 24), compiled once per agent. */
  private readonly rulesByAgent = new Map<string, PermissionRuleSet>();
  /** Issue 30: each agent's tool surface in a sub-agent's session, without the delegation tools. */
  private readonly childSurfaces = new WeakMap<AgentDefinition, ToolsetAgent>();
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
    // Without a `warn` of the embedder's, the console: an error behind the note (a chart's defect) with its stack.
    this.warn = options.warn ?? ((message, fields) => console.warn(`turnchart: ${message}`, ...(fields?.error instanceof Error ? [fields.error] : [])));
    this.sequenceBlock = options.sequenceBlock ?? SEQUENCE_BLOCK;
    this.skills = options.skills ? { dir: resolve(options.skills.dir), disabled: options.skills.disabled ?? [] } : null;
    this.services = { storage: options.storage, now, newId: (prefix) => `${prefix}_${orderedUuid()}` };
    this.updates$ = isolated(this.runtimeSubject, { onError: (error) => this.warn(`an update subscriber threw: ${messageOf(error)}`) });
    this.reaper = new IdleReaper(options.idleTtlMs ?? null, options.clock ?? REAL_CLOCK, (id) => void this.evict(id));
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
      agentExists: (name) => agentNamed(this.agents, name) !== undefined,
      agentSwitchedInRun: (env, name) => this.sessions.get(env.config.id)?.handle.actor.send({ type: 'session.agent_installed', limits: limitsOf(agentNamed(this.agents, name)!) }),
      ...this.services,
      env: (id) => this.envOf(id),
      releaseLease: (id) => this.releaseLease(id),
      ownedElsewhere: (id) => this.lose(id),
      toolset,
      trace,
      skills: this.skills,
      warn: this.warn,
      clock: options.clock ?? REAL_CLOCK,
      dailyTokensPerPrincipal: options.dailyTokensPerPrincipal ?? null,
    });
    this.sessionLogic = new Embedding(
      {
        assertRunning: () => this.assertRunning(),
        createSession: (options) => this.createSession(options),
        openSession: (id) => this.openSession(id),
        held: (id) => this.sessions.get(id),
      },
      this.warn,
    ).logic;
    // Tool sources' changes reach the toolset from now on, until shutdown.
    toolset.watch();
    ownership.startRenewing(
      // A closing session still holds its lease until its close is written; a lost one holds none.
      () => [...this.sessions].flatMap(([id, open]) => (open.lost ? [] : [id])),
      (id) => this.lose(id),
      (error) => this.warn(`could not renew session leases: ${messageOf(error)}`),
    );
  }

  /** Trace signals lost to a full queue or a failing write (RT-26). */
  get droppedSignals(): number {
    return this.trace.droppedSignals;
  }

  /**
   * Issue 27: sees every span (turn, model call, tool call) as it starts and ends, with its facts —
   * what the OpenTelemetry exporter and the metrics are built on. Returns the way to stop.
   */
  observeSpans(observer: SpanObserver): () => void {
    return this.trace.observe(observer);
  }

  /** Sessions open in this runtime right now. */
  get openSessionCount(): number {
    return this.sessions.size;
  }

  /** Issue 27: sessions this runtime opened by taking them from an owner whose lease ran out. */
  get leaseTakeovers(): number {
    return this.takeovers;
  }

  /** Issue 27: turns running and queued in the open sessions, read from their live views (one pass, for a metrics scrape). */
  get turnCounts(): { running: number; queued: number } {
    let running = 0;
    let queued = 0;
    for (const { env } of this.sessions.values()) {
      if (env.output.live.runtime.kind === 'running') running += 1;
      queued += env.output.live.queue.length;
    }
    return { running, queued };
  }

  /** Whether the session is held in this runtime: open, or closing and not yet released. */
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
    const { config, conversation } = env;
    return previewContextWindow(
      { systemPrompt: config.agent.systemPrompt, conversation: conversation.chat.view(), watermark: conversation.chat.watermark },
      config.tools(),
      config.model.capabilities,
    );
  }

  /**
   * RL-4: the session's tool dispatch audit, newest first — one row per tool result, written with
   * it. `before` is the `nextBefore` of the previous page. Reads storage only; the session need not be open.
   */
  async auditLog(sessionId: string, page: AuditPage = {}): Promise<AuditLog> {
    return auditLog(this.options.storage, sessionId, page);
  }

  /** Resolves once every trace signal queued so far is written or dropped. */
  flushTrace(): Promise<void> {
    return this.trace.flush();
  }

  /**
   * Sub-agents: the session that started this one (`parent`, with the turn and the `spawn_agent`
   * call) and the sessions this one started (`children`, oldest first), read from storage.
   */
  async agentLinks(sessionId: string): Promise<AgentLinks> {
    return agentLinks(this.options.storage, sessionId);
  }

  /** The agents a session of this runtime may run, by name (the built-in ones and those configured). */
  agentNames(): string[] {
    return Object.keys(this.agents);
  }

  /** The names of the tools an agent's model is offered now; undefined for an agent this runtime does not have. */
  toolNamesOf(agent: string): string[] | undefined {
    const definition = agentNamed(this.agents, agent);
    return definition && this.toolset.surfaceFor(definition).map((tool) => tool.name);
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
      permissionMode: parent.config.permissionMode,
      nonInteractive: true,
      ...(parent.config.workspaceDir !== null && { workspaceDir: parent.config.workspaceDir }),
      // A sub-agent's session belongs to whoever owns the session that started it, and is exempt from quotas when that one is.
      ...(parent.config.principal !== null && { principal: parent.config.principal }),
      ...(parent.config.quotaExempt && { quotaExempt: true }),
    });
    return this.createParsed(parsed, link);
  }

  private async createParsed(data: ReturnType<typeof createSessionSchema.parse>, parentLink?: AgentLink): Promise<SessionHandle> {
    const parsed = { data };
    if (!agentNamed(this.agents, parsed.data.agent)) throw new TurnchartError('UnknownAgent', `no agent named '${parsed.data.agent}'`);
    if (parsed.data.id !== undefined && (await sessionExists(this.options.storage, parsed.data.id))) throw sessionTaken(parsed.data.id);
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
      principal: parsed.data.principal ?? null,
      ...(parsed.data.quotaExempt && { quotaExempt: true }),
      // Issue 26: a sub-agent's turn is not resumed: its parent's wait gets its end, and the parent's turn resumes.
      ...(this.options.resumeTurns !== false && !parentLink && { resumeTurns: true }),
    };
    const fence = await this.options.storage.createSession(row, this.ownership.lease).catch(async (error: unknown) => {
      // Named by the caller, the id may have been taken since the check: the insert's key violation says so.
      if (parsed.data.id !== undefined && (await sessionExists(this.options.storage, row.id).catch(() => false))) throw sessionTaken(row.id);
      throw persistenceError(error);
    });
    return this.start({ row: { ...row, updateSequence: 0 }, fence, chat: new ChatState(), plan: null, accepted: {}, runs: new Map(), queued: [], trackers: FRESH_TRACKERS });
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
    if (open?.handle.isOpen) return open.handle;
    // Two requests opening one session share one opening: a second lease would fence off the first.
    let opening = this.opening.get(id.data);
    if (!opening) {
      // A session closing here holds its lease until its close has written its last sequence. Opened
      // before that, it would take its own lease for a crashed owner's (numbering on past the block
      // reserved), and the close's write would then give up the new opening's lease.
      const closed = open ? open.handle.close().catch(() => undefined) : Promise.resolve();
      opening = closed.then(() => this.load(id.data)).then(
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

  /** Stops every session (running turns end `actor_stopped`), flushes the trace, closes storage. */
  async shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.allSettled([...this.opening.values()]);
      // Issue 26: running turns are parked, not ended: the next host to open their sessions goes on with them.
      await Promise.all([...this.sessions.values()].map(({ handle }) => handle.close('park')));
      this.ownership.stop();
      this.reaper.stop();
      this.toolset.close();
      await this.trace.flush();
      this.runtimeSubject.complete();
      this.closedSubject.complete();
      await this.options.storage.close();
    })();
    return this.stopping;
  }

  /** Opens the sessions whose queued turns nobody is running (after a restart, or their owner left). */
  async startQueuedSessions(): Promise<void> {
    for (const id of await this.options.storage.unheldSessionsWithWork()) {
      await this.openSession(id).catch((error: unknown) => this.warn(`could not resume the queue of session ${id}: ${messageOf(error)}`, { sessionId: id }));
    }
  }

  private async load(sessionId: string): Promise<Loaded> {
    const storage = this.options.storage;
    const acquired = await this.ownership.acquire(sessionId, this.sequenceBlock);
    if (!acquired.ok) {
      if (acquired.reason === 'unknown') throw new TurnchartError('UnknownSession', `no session '${sessionId}'`);
      throw new SessionOwnedElsewhereError(sessionId, acquired.holder);
    }
    if (acquired.tookOver) this.takeovers += 1;
    const [{ chat, plan, messages }, turns, queued] = await Promise.all([
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
    // Issue 26: a turn still running in storage runs nowhere (this runtime is only now opening its session).
    const left = turns.find((turn) => turn.status === 'running');
    const resume = left ? await this.settleLeftTurn(acquired.session, acquired.fence, acquired.tookOver, left, messages) : null;
    const resumeMessages = resume ? messages.filter((m) => m.turnId === left!.id) : [];
    return { row: acquired.session, fence: acquired.fence, chat, plan, accepted, runs, queued, trackers, resume, resumeMessages };
  }

  /**
   * Issue 26: a turn its host left running goes on here, unless its session or agent does not resume
   * turns (it ends `interrupted`, as before) or its run is past its time limit (`timed_out`).
   */
  private async settleLeftTurn(row: SessionRow, fence: number, tookOver: boolean, turn: TurnRow, messages: readonly StoredMessage[]): Promise<TurnToResume | null> {
    const storage = this.options.storage;
    const agent = agentNamed(this.agents, row.agent) ?? this.agents.default!;
    const now = this.services.now();
    if (row.resumeTurns !== true || !agent.resume) {
      await storage.endTurn(turn.id, { status: 'interrupted', errorCode: 'process_restart', errorMessage: null, finalText: null, finishedAtMs: now }, fence);
      return null;
    }
    // A result that ended the turn (a denial, a loop stop) was stored, but not the end: it ends as it would have.
    const ended = storedEnding(messages, turn.id);
    if (turn.cancelRequestedAtMs !== undefined || ended?.kind === 'cancelled') {
      await storage.endTurn(turn.id, { status: 'cancelled', errorCode: null, errorMessage: null, finalText: null, finishedAtMs: now }, fence);
      return null;
    }
    if (ended) {
      await storage.endTurn(turn.id, { status: 'failed', errorCode: ended.code, errorMessage: ended.message, finalText: null, finishedAtMs: now }, fence);
      return null;
    }
    if (agent.runTimeoutMs !== null && turn.startedAtMs + agent.runTimeoutMs <= now) {
      const message = `the run passed its time limit of ${agent.runTimeoutMs} ms while no host held it`;
      await storage.endTurn(turn.id, { status: 'timed_out', errorCode: 'run_timeout', errorMessage: message, finalText: null, finishedAtMs: now }, fence);
      return null;
    }
    const approvals = await storage.listApprovals(turn.id);
    const waitsForAnswer = approvals.some((a) => a.decision === null);
    const reason = tookOver ? 'owner_lost' : waitsForAnswer ? 'reopened' : 'host_restarted';
    return turnToResume(turn, messages, approvals, reason);
  }

  private start(loaded: Loaded): SessionHandle {
    const { row, fence } = loaded;
    const agent = agentNamed(this.agents, row.agent) ?? this.agents.default!;
    const start = row.updateSequence ?? 0;
    // The session actor exists only below; the watchdog's progress reports find it through this.
    const sessionActor: { ref: AnyActorRef | null } = { ref: null };
    const env: SessionEnv = createSessionEnv({
      ...loaded,
      agent: this.sessionAgent(row.agent, agent, row.parent != null),
      output: {
        runtimeSubject: this.runtimeSubject,
        now: this.services.now,
        options: {
          sequences: {
            start,
            reserved: start + this.sequenceBlock,
            block: this.sequenceBlock,
            reserve: (upTo) => this.options.storage.reserveUpdateSequence(row.id, upTo, fence),
          },
          onSubscriberError: (error) => this.warn(`an update subscriber of session ${row.id} threw: ${messageOf(error)}`, { sessionId: row.id, error }),
          onSubscribers: () => this.checkIdle(row.id),
          // The agent may change (agent.switch), so the check is per update, and only when some agent watches.
          ...(this.watchesProgress && { onEmit: () => env.config.agent.guardrails.stallTimeoutMs !== null && reportProgress(sessionActor.ref) }),
        },
      },
    });
    if (loaded.resume) {
      // The continuation is everything this owner issues: its first number, whatever the chart emits first.
      env.turns.resumed = { turnId: loaded.resume.chart.turnId, messages: loaded.resumeMessages ?? [], notRun: loaded.resume.notRun, asked: loaded.resume.asked, fromSequence: env.output.updates.lastSequence + 1, reason: loaded.resume.chart.reason, traceParent: loaded.resume.traceParent };
      for (const [callId, expiry] of loaded.resume.expiries) env.turns.approvalExpiries.set(callId, expiry);
    }
    const actor = createActor(this.machine, {
      input: {
        sessionId: row.id,
        limits: limitsOf(agent),
        accepted: loaded.accepted,
        reloadRequired: false,
        busyPolicy: env.config.busyPolicy,
        queue: env.output.live.queue,
        trackers: loaded.trackers,
        resume: loaded.resume?.chart ?? null,
        resumesTurns: row.resumeTurns === true && agent.resume,
      },
      inspect: this.options.inspect,
      ...(this.options.clock && { clock: this.options.clock }),
    });
    sessionActor.ref = actor;
    // An error inside a chart is a defect; observing it keeps it from becoming an unhandled crash.
    actor.subscribe({ error: (error) => this.warn(`session ${row.id} failed: ${messageOf(error)}`, { sessionId: row.id, error }) });
    const handle = new SessionHandle(row.id, actor, env, this.services, this.skills, this.lifecycle);
    this.sessions.set(row.id, { handle, env, lost: false });
    this.trace.sessionsOpen(this.sessions.size);
    actor.subscribe(() => this.checkIdle(row.id));
    actor.start();
    // The chart has announced the resumed turn (`turn_resumed`); what it waits for is known already.
    if (loaded.resume?.pending) env.output.live.awaitApproval(loaded.resume.chart.turnId, loaded.resume.pending);
    this.checkIdle(row.id);
    return handle;
  }

  /** agent.switch, once stored: the next turn runs `name`'s prompt, limits, hooks, guardrails and tools. */
  private installAgent(env: SessionEnv, name: string): void {
    const agent = agentNamed(this.agents, name);
    if (!agent) throw new TurnchartError('UnknownAgent', `no agent named '${name}'`);
    installSessionAgent(env.config, this.sessionAgent(name, agent, env.config.parent !== null));
  }

  /**
   * The agent with what this runtime resolves for it: its hooks after the runtime's, its tool surface, its model, its permission rules.
   * In a sub-agent's session (`asChild`) the delegation tools are not offered unless the agent says `nested` (the seed's rule).
   */
  private sessionAgent(name: string, agent: AgentDefinition, asChild: boolean): SessionAgent {
    const surface = asChild && agent.delegation !== null && !agent.delegation.nested ? this.withoutDelegation(agent) : agent;
    return {
      agentName: name,
      agent,
      hooks: this.hooksOf(name, agent),
      tools: () => this.toolset.surfaceFor(surface),
      model: agent.model ?? this.options.model,
      permissions: this.permissionsOf(name, agent),
      sandbox: () => {
        const command = this.toolset.toolFor(agent, 'run_command')?.sandbox;
        return command ? { command, network: agent.sandbox.network } : null;
      },
    };
  }

  /** The agent as the toolset sees it in a sub-agent's session: one object per agent, so its surface stays cached. */
  private withoutDelegation(agent: AgentDefinition): ToolsetAgent {
    let surface = this.childSurfaces.get(agent);
    if (!surface) {
      surface = { tools: agent.tools, delegation: null, switchTo: agent.switchTo };
      this.childSurfaces.set(agent, surface);
    }
    return surface;
  }

  /** Each agent's rules over the runtime's, compiled once per agent. */
  private permissionsOf(name: string, agent: AgentDefinition): PermissionRuleSet {
    let rules = this.rulesByAgent.get(name);
    if (!rules) {
      rules = compilePermissionRules(this.options.permissions, agent.permissions ?? undefined);
      this.rulesByAgent.set(name, rules);
    }
    return rules;
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
    if (open) this.reaper.update(sessionId, isIdle(open));
  }

  /**
   * The idle timer ran out. Whether the session is idle is asked again now, not taken from when
   * the timer was armed (a command may have begun since); the chart then closes it in its own
   * order, after anything that is finishing.
   */
  private async evict(sessionId: string): Promise<void> {
    const open = this.sessions.get(sessionId);
    if (!open || this.stopping || !isIdle(open)) return;
    // Issue 26: a turn waiting for a human is parked, not ended: the answer reopens it.
    await open.handle.close('park');
  }

  /** Another owner took the session (our lease lapsed): stop it here without writing anything more. */
  private lose(sessionId: string): void {
    const open = this.sessions.get(sessionId);
    if (!open || open.lost) return;
    open.lost = true;
    // Kept until its chart has closed: a turn it stops still ends and is announced (its writes now fail
    // on the fence). One that was closing anyway may just have given the lease up itself.
    if (open.handle.isOpen) this.warn(`session ${sessionId} is now held by another owner; closing it here`, { sessionId });
    // Issue 26: its running turn goes on with the new owner; here it is parked (its effects abandoned, nothing
    // written, waiters told `parked`), never ended — an ending here would be an outcome storage never has.
    void open.handle.close('park');
  }

  /** The close's last write (the chart's `closeSession`): the lease given up with the exact last update sequence. */
  private async releaseLease(sessionId: string): Promise<void> {
    const open = this.sessions.get(sessionId);
    if (!open || open.lost) return;
    open.env.output.updates.seal();
    try {
      await this.options.storage.releaseSession(sessionId, this.ownership.identity.ownerId, open.env.output.updates.lastSequence, open.env.config.fence);
    } catch (error) {
      // The lease then simply runs out; nothing is lost.
      this.warn(`could not release session ${sessionId}: ${messageOf(error)}`, { sessionId });
      throw error;
    }
  }

  /** The session's actor has stopped, its lease given up: only now does it leave the runtime. */
  private async release(handle: SessionHandle): Promise<void> {
    const open = this.sessions.get(handle.id);
    this.reaper.forget(handle.id);
    if (open?.handle !== handle) return this.closedSubject.next(handle.id);
    // A chart that failed never reached `closing`: its lease is given up here instead.
    if (!handle.actor.getSnapshot().matches('closed')) await this.releaseLease(handle.id).catch(() => undefined);
    this.sessions.delete(handle.id);
    this.trace.sessionsOpen(this.sessions.size);
    this.delegation.forget(handle.id);
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

/**
 * Nothing runs or is queued — or all the running turn does is wait for a human's answer (issue 26:
 * it is parked, and the answer reopens it) — nobody watches its updates and no command is under way:
 * the session may close.
 */
function isIdle({ handle, env }: OpenSession): boolean {
  const snapshot = handle.actor.getSnapshot();
  if (snapshot.status !== 'active' || snapshot.context.queue.length > 0 || env.output.updates.subscriberCount > 0 || handle.busy) return false;
  if (snapshot.matches('idle')) return true;
  // Nobody here waits for the turn's outcome either: the turn ends on whichever host the answer reopens it.
  return (
    snapshot.matches('running') &&
    snapshot.context.resumesTurns === true &&
    snapshot.context.pendingPermission !== null &&
    snapshot.context.awaitedApprovals.length === 0 &&
    env.turns.waiters.size === 0
  );
}

function sessionTaken(id: string): TurnchartError {
  return new TurnchartError('SessionExists', `a session '${id}' exists already`);
}

export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const { toolset, agents } = checkRuntimeOptions(options);
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
