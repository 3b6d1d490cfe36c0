import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { Subject, type Observable } from 'rxjs';
import { createActor, type InspectionEvent } from 'xstate';
import { z } from 'zod';
import type { CorrectionReport, SessionRow, SessionStorage } from '../../storage/session-storage.js';
import { createSessionSchema, type CreateSessionOptions } from '../protocol/commands.js';
import { TurnchartError } from '../protocol/errors.js';
import type { ModelPort } from '../protocol/model.js';
import { previewContextWindow, type ContextWindowPreview } from '../context/inspect.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { AnyTool } from '../tools/define-tool.js';
import { Toolset } from '../tools/toolset.js';
import type { SkillsConfig } from '../skills/types.js';
import { limitsOf, resolveAgents, type AgentConfig, type AgentDefinition } from './agents.js';
import { ChatState, ChatStateError } from './chat-state.js';
import { loadConversation } from './load-conversation.js';
import { LiveView } from './live-view.js';
import { provideMachines, type ProvidedSessionMachine } from './provided-machines.js';
import { SessionHandle } from './session-handle.js';
import type { RuntimeServices, SessionEnv } from './session-env.js';
import { TraceRecorder } from './trace-recorder.js';
import { UpdateStream } from './update-stream.js';

export type { ContextWindowPreview };

export interface RuntimeOptions {
  storage: SessionStorage;
  model: ModelPort;
  tools?: AnyTool[];
  agents?: Record<string, AgentConfig>;
  /** XState inspection observer for every actor of every session (e.g. `@statelyai/inspect`). */
  inspect?: (event: InspectionEvent) => void;
  /** Clock for stored and streamed timestamps; tests may fix it. */
  now?: () => number;
  /** Capacity of the trace queue before signals are dropped (RT-26). */
  traceQueueCapacity?: number;
  /** A skills directory: its catalog is world state, its skills can be picked as turn input (RT-1, CW-2). */
  skills?: SkillsConfig;
  /** Where non-fatal notes go (e.g. a skill folder without SKILL.md); default `console.warn`. */
  warn?: (message: string) => void;
}

const sessionIdSchema = z.string().min(1).max(200);

const optionsSchema = z.object({
  storage: z.custom<SessionStorage>((v) => typeof (v as SessionStorage | null)?.beginTurn === 'function', 'a SessionStorage'),
  model: z.custom<ModelPort>((v) => typeof (v as ModelPort | null)?.stream === 'function', 'a ModelPort'),
  tools: z.array(z.custom<AnyTool>((v) => typeof (v as AnyTool | null)?.execute === 'function', 'a tool from defineTool')).optional(),
  agents: z.record(z.string(), z.unknown()).optional(),
  inspect: z.function().optional(),
  now: z.function().optional(),
  traceQueueCapacity: z.number().int().min(1).optional(),
  skills: z.object({ dir: z.string().min(1), disabled: z.array(z.string()).optional() }).optional(),
  warn: z.function().optional(),
});

/**
 * The runtime (000 §1): owns the sessions of one process. Creating it migrates the storage and
 * runs the startup correction (RT-24) before any session can start a turn.
 */
export class Runtime {
  private readonly sessions = new Map<string, { handle: SessionHandle; env: SessionEnv }>();
  private readonly runtimeSubject = new Subject<UpdateEnvelope>();
  readonly updates$: Observable<UpdateEnvelope> = this.runtimeSubject.asObservable();
  private readonly machine: ProvidedSessionMachine;
  private readonly services: RuntimeServices;
  private stopping: Promise<void> | null = null;
  private readonly skills: SkillsConfig | null;

  constructor(
    private readonly options: RuntimeOptions,
    private readonly agents: Record<string, AgentDefinition>,
    private readonly trace: TraceRecorder,
    private readonly toolset: Toolset,
    /** What the startup correction changed. */
    readonly correction: CorrectionReport,
  ) {
    const now = options.now ?? Date.now;
    this.skills = options.skills ? { dir: resolve(options.skills.dir), disabled: options.skills.disabled ?? [] } : null;
    this.services = { storage: options.storage, now, newId: (prefix) => `${prefix}_${randomUUID()}` };
    this.machine = provideMachines({
      ...this.services,
      env: (id) => this.envOf(id),
      model: options.model,
      toolset,
      trace,
      skills: this.skills,
      warn: options.warn ?? ((message) => console.warn(`turnchart: ${message}`)),
    });
  }

  /** Trace signals lost to a full queue or a failing write (RT-26). */
  get droppedSignals(): number {
    return this.trace.droppedSignals;
  }

  /**
   * CW-9: a read-only preview of the next request, built by the same `prepare` from the session's
   * current conversation — without sampling world state and without calling the model.
   */
  async inspectContextWindow(sessionId: string): Promise<ContextWindowPreview> {
    const { env } = this.sessions.get(sessionId) ?? (await this.openSession(sessionId), this.sessions.get(sessionId)!);
    return previewContextWindow(env, this.toolset.definitions, this.options.model.capabilities);
  }

  /** Resolves once every trace signal queued so far is written or dropped. */
  flushTrace(): Promise<void> {
    return this.trace.flush();
  }

  async createSession(options: CreateSessionOptions = {}): Promise<SessionHandle> {
    this.assertRunning();
    const parsed = createSessionSchema.safeParse(options);
    if (!parsed.success) throw new TurnchartError('InvalidInput', z.prettifyError(parsed.error));
    if (!this.agents[parsed.data.agent]) throw new TurnchartError('UnknownAgent', `no agent named '${parsed.data.agent}'`);
    const row: SessionRow = {
      id: this.services.newId('ses'),
      agent: parsed.data.agent,
      permissionMode: parsed.data.permissionMode,
      workspaceDir: parsed.data.workspaceDir === undefined ? null : resolve(parsed.data.workspaceDir),
      createdAtMs: this.services.now(),
    };
    await this.options.storage.createSession(row);
    return this.start(row, new ChatState(), {}, null);
  }

  /** Opens a stored session: its conversation is loaded from storage; nothing is resumed (RT-24). */
  async openSession(sessionId: string): Promise<SessionHandle> {
    this.assertRunning();
    const id = sessionIdSchema.safeParse(sessionId);
    if (!id.success) throw new TurnchartError('InvalidInput', z.prettifyError(id.error));
    const open = this.sessions.get(id.data);
    if (open) return open.handle;
    const storage = this.options.storage;
    const row = await storage.getSession(id.data);
    if (!row) throw new TurnchartError('UnknownSession', `no session '${id.data}'`);
    const [{ chat, plan }, turns] = await Promise.all([
      loadConversation(storage, row.id).catch((error: unknown) => {
        throw error instanceof ChatStateError ? new TurnchartError(error.reason, error.message) : error;
      }),
      storage.listTurns(row.id),
    ]);
    const accepted = Object.fromEntries(turns.map((t) => [t.clientRequestId, t.id]));
    return this.sessions.get(sessionId)?.handle ?? this.start(row, chat, accepted, plan);
  }

  /** Stops every session (running turns end `actor_stopped`), flushes the trace, closes storage. */
  async shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all([...this.sessions.values()].map(({ handle }) => handle.stop()));
      await this.trace.flush();
      this.runtimeSubject.complete();
      await this.options.storage.close();
    })();
    return this.stopping;
  }

  private start(row: SessionRow, chat: ChatState, accepted: Record<string, string>, plan: SessionEnv['live']['plan']): SessionHandle {
    const agent = this.agents[row.agent] ?? this.agents.default!;
    const live = new LiveView(plan);
    const env: SessionEnv = {
      id: row.id,
      agentName: row.agent,
      agent,
      permissionMode: row.permissionMode,
      workspaceDir: row.workspaceDir,
      chat,
      live,
      updates: new UpdateStream(row.id, live, this.runtimeSubject, this.services.now),
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
      waiters: new Map(),
    };
    const actor = createActor(this.machine, {
      input: { sessionId: row.id, limits: limitsOf(agent), accepted, reloadRequired: false },
      inspect: this.options.inspect,
    });
    // An error inside a chart is a defect; observing it keeps it from becoming an unhandled crash.
    actor.subscribe({ error: (error) => console.error(`turnchart session ${row.id} failed:`, error) });
    const handle = new SessionHandle(row.id, actor, env, this.services, this.skills);
    this.sessions.set(row.id, { handle, env });
    actor.start();
    return handle;
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

export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw new TurnchartError('InvalidOptions', z.prettifyError(parsed.error));
  let agents: Record<string, AgentDefinition>;
  try {
    agents = resolveAgents(options.agents);
  } catch (error) {
    throw new TurnchartError('InvalidOptions', error instanceof z.ZodError ? z.prettifyError(error) : String(error));
  }
  const toolset = new Toolset(options.tools ?? []);
  const now = options.now ?? Date.now;
  await options.storage.migrate();
  const correction = await options.storage.correctInterrupted(now());
  const trace = new TraceRecorder(options.storage, options.traceQueueCapacity);
  return new Runtime(options, agents, trace, toolset, correction);
}
