import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import {
  createRuntime,
  defineTool,
  scriptedModel,
  withFaults,
  type AuthorizationDecision,
  type FaultyStorage,
  type GuardrailsConfig,
  type MistakeLimitDecision,
  type ModelCallOptions,
  type ModelRequest,
  type PermissionMode,
  type PermissionRules,
  type Runtime,
  type ScriptedReply,
  type SessionHandle,
  type SessionStorage,
  type StoredMessage,
  type ToolExecutionResult,
  type DispatchDecision,
  type TurnOutcome,
  type UpdateEnvelope,
  type ToolAudit,
  type ToolRetryPolicyConfig,
} from '../../src/index.js';
import { holding } from '../support/workspace.js';
import { DeadlineClock } from './deadline-clock.js';
import { migratedMemoryStorage } from './storage-image.js';
import type { BusyPolicy } from '../../src/protocol/commands.js';

/** A window small enough that one big message crosses the auto-compact line. */
export const SMALL_WINDOW = { contextWindow: 6_000, maxOutputTokens: 500, maxReasoningTokens: 0 };
/** About 6 000 tokens: over the line of `SMALL_WINDOW` on its own, under the per-item limit. */
export const BIG_TEXT = 'x'.repeat(24_000);
/** What the tool-call chart stores for a call the user cancelled. */
const CANCELLED_BY_USER = 'tool call cancelled by the user';

/** The agent's limits in a path; `runTimeoutMs: null` for a run without a time limit. */
export interface StageLimits {
  maxModelCalls: number;
  doomLoopThreshold: number;
  runTimeoutMs: number | null;
}

export interface StageOptions {
  limits: StageLimits;
  permissionMode?: PermissionMode;
  busyPolicy?: BusyPolicy;
  /** The agent's `parallelToolCalls` (RL-5); off when not given. */
  parallelToolCalls?: number;
  /** RL-4: the runtime gets `beforeToolDispatch` and `afterToolDispatch` hooks that ask the script. */
  dispatchHooks?: boolean;
  /** The agent's guardrail profile (issue 12); the default profile when not given. */
  guardrails?: GuardrailsConfig;
  /** The session cannot ask for approvals (a sub-agent's, or a host's headless one). */
  nonInteractive?: boolean;
  /** Sub-agents: the agent may start `helper` sessions, this many live per turn; no delegation when not given. */
  delegation?: { maxChildren: number };
  /** Issue 24: the runtime's permission rules. */
  permissions?: PermissionRules;
  /** Issue 25: the session's principal, and the tokens it may spend a day (the runtime's `dailyTokensPerPrincipal`). */
  principal?: { name: string; dailyTokens: number };
  /** Issue 30: the agent's retry policy, and the time limit of its tools (real time: a path's timeout is a real one). */
  retry?: { policy: ToolRetryPolicyConfig; toolTimeoutMs: number };
}

/** The system prompt of the sub-agent a path's agent may start: its model calls go to `helperReply`. */
export const HELPER_PROMPT = 'path helper';

/** What a path's script decides when the runtime asks: the model's reply, a tool's result. */
export interface Script {
  modelReply(signal: AbortSignal, request: ModelRequest): ScriptedReply | Promise<ScriptedReply>;
  /** A sub-agent's model call; by default it waits until its turn is cancelled or stopped. */
  helperReply?(signal: AbortSignal): Promise<ScriptedReply>;
  toolResult(name: string, signal: AbortSignal, toolCallId: string): ToolExecutionResult | Promise<ToolExecutionResult>;
  /** The write tool's `authorize` hook; by default it asks for approval of the path. */
  authorize?(toolCallId: string): AuthorizationDecision;
  /** RL-4's dispatch hooks, when the stage has them. */
  beforeDispatch?(toolCallId: string, signal: AbortSignal): Promise<DispatchDecision | undefined>;
  afterDispatch?(toolCallId: string, signal: AbortSignal): Promise<void>;
  /** The agent's `onMistakeLimit` (GR-2); the agent has none when the script has none. */
  mistakeDecision?(signal: AbortSignal): MistakeLimitDecision | Promise<MistakeLimitDecision>;
  observe(event: InspectionEvent): void;
}

/** Until the signal aborts; for a model call or tool a cancel or stop is meant to interrupt. */
export function untilAborted<T>(signal: AbortSignal, value: T): Promise<T> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(value);
    signal.addEventListener('abort', () => resolve(value), { once: true });
  });
}

/**
 * A real runtime on SQLite `:memory:` (opened already migrated) behind the fault decorator, in a
 * real workspace directory, whose model and tools ask a path's script what to do; its charts' clock
 * moves only when a path makes a run pass its time limit. It also keeps the invariants that must
 * hold after every step and at the end of every path (issue 4, item 1).
 */
export class Stage {
  readonly updates: UpdateEnvelope[] = [];
  private constructor(
    readonly runtime: Runtime,
    readonly session: SessionHandle,
    readonly storage: FaultyStorage,
    private readonly watched: WatchedStorage,
    readonly workspace: string,
    /** The charts' clock: `expire()` makes the run pass its time limit. */
    readonly clock: DeadlineClock,
    private readonly runs: ToolRuns,
  ) {
    session.updates$.subscribe((u) => this.onUpdate(u));
  }

  get violations(): string[] {
    return this.watched.violations;
  }

  private get finished(): Set<string> {
    return this.watched.finished;
  }

  /** Holds every call of `method` at a gate from now on: `reached` when one arrives, `release` lets them through. */
  hold(method: keyof SessionStorage): { reached: Promise<void>; release: () => void } {
    return this.watched.hold(method);
  }

  static async open(script: Script, observers: Array<(e: InspectionEvent) => void>, options: StageOptions) {
    const { limits, permissionMode = 'ask', busyPolicy = 'reject', parallelToolCalls, dispatchHooks = false, guardrails, nonInteractive = false, delegation, permissions, principal, retry } = options;
    const watched = new WatchedStorage(await migratedMemoryStorage());
    const storage = withFaults(watched.storage);
    const model = scriptedModel(
      Array.from({ length: 12 }, () => (request: ModelRequest, options: ModelCallOptions) => {
        if (request.system.some((part) => part.content.includes(HELPER_PROMPT))) {
          return script.helperReply?.(options.signal) ?? untilAborted<ScriptedReply>(options.signal, { text: 'stopped' });
        }
        return script.modelReply(options.signal, request);
      }),
      { capabilities: SMALL_WINDOW },
    );
    const opened: { stage?: Stage } = {};
    const runs = new ToolRuns(watched.violations);
    const tools = pathTools(script, runs, (toolCallId) => opened.stage?.checkAssistantStored(toolCallId) ?? Promise.resolve());
    const clock = new DeadlineClock();
    const { runTimeoutMs, ...counts } = limits;
    const agent = {
      systemPrompt: 'path agent',
      ...counts,
      ...(runTimeoutMs !== null && { runTimeoutMs }),
      ...(parallelToolCalls !== undefined && { parallelToolCalls }),
      ...(guardrails !== undefined && { guardrails }),
      ...(script.mistakeDecision && { onMistakeLimit: ({ signal }: { signal: AbortSignal }) => script.mistakeDecision!(signal) }),
      ...(delegation && { delegation: { agents: ['helper'], maxChildren: delegation.maxChildren } }),
      ...(retry && { retryPolicy: retry.policy, toolTimeoutMs: retry.toolTimeoutMs }),
    };
    const runtime = await createRuntime({
      storage,
      model,
      tools,
      agents: {
        default: { ...agent, switchTo: ['other'] },
        // agent.switch goes back and forth between two agents alike, so a switch changes nothing a path depends on.
        other: { ...agent, switchTo: ['default'] },
        helper: { systemPrompt: HELPER_PROMPT },
      },
      clock,
      ...(permissions && { permissions }),
      ...(principal && { dailyTokensPerPrincipal: principal.dailyTokens }),
      ...(dispatchHooks && {
        hooks: {
          beforeToolDispatch: ({ toolCallId, signal }) => script.beforeDispatch!(toolCallId, signal),
          afterToolDispatch: ({ toolCallId, signal }) => script.afterDispatch!(toolCallId, signal),
        },
      }),
      inspect: (event) => {
        for (const observe of observers) observe(event);
        script.observe(event);
      },
      warn: () => undefined,
    });
    const workspace = mkdtempSync(path.join(os.tmpdir(), 'turnchart-paths-'));
    const session = await runtime.createSession({ agent: 'default', permissionMode, workspaceDir: workspace, busyPolicy, nonInteractive, ...(principal && { principal: principal.name }) });
    opened.stage = new Stage(runtime, session, storage, watched, workspace, clock, runs);
    return opened.stage;
  }

  /** Resolves with the outcome announced for `turnId`. */
  outcomeOf(turnId: string): Promise<TurnOutcome> {
    return new Promise((resolve) => {
      const sub = this.session.updates$.subscribe((u) => {
        if (u.turnId === turnId && u.update.type === 'turn_finished') {
          sub.unsubscribe();
          resolve(u.update.outcome);
        }
      });
      const seen = this.updates.find((u) => u.turnId === turnId && u.update.type === 'turn_finished');
      if (seen?.update.type === 'turn_finished') resolve(seen.update.outcome);
    });
  }

  private onUpdate(u: UpdateEnvelope): void {
    if (u.sequence !== this.updates.length + 1) this.violations.push(`update sequence ${u.sequence} after ${this.updates.length}`);
    if (this.finished.has(u.turnId)) this.violations.push(`'${u.update.type}' emitted after turn_finished of ${u.turnId}`);
    if (u.update.type === 'turn_finished') {
      this.finished.add(u.turnId);
      this.runs.end(u.turnId);
    }
    this.updates.push(u);
  }

  /** A tool never runs before the assistant message that asked for it is stored (RT-12). */
  async checkAssistantStored(toolCallId: string): Promise<void> {
    const stored = await this.storage.listMessages(this.session.id);
    const asked = stored.some((m) => m.message.role === 'assistant' && m.message.toolCalls.some((c) => c.id === toolCallId));
    if (!asked) this.violations.push(`tool call ${toolCallId} ran before its assistant message was stored`);
  }

  /** At most one stored result per call at any time, as the write log shows. */
  checkStep(label: string): void {
    const results = new Map<string, number>();
    for (const call of this.storage.calls) {
      if (call.method !== 'appendMessage' || call.failed) continue;
      const message = (call.args[0] as { message: { role: string; toolCallId?: string } }).message;
      if (message.role === 'tool') results.set(message.toolCallId!, (results.get(message.toolCallId!) ?? 0) + 1);
    }
    for (const [id, n] of results) if (n > 1) this.violations.push(`${label}: ${n} results written for ${id}`);
  }

  /** The end of a path: every call has its one result and the stored turn says what the outcome says. */
  async checkEnd(turnId: string, outcome: TurnOutcome, terminalWriteFailed = false): Promise<void> {
    // A world-state write still under way lands first: were it after turn_finished, it says so then.
    await this.watched.settled();
    const stored = await this.storage.listMessages(this.session.id);
    const calls = stored.flatMap((m) => (m.message.role === 'assistant' ? m.message.toolCalls.map((c) => c.id) : []));
    for (const id of calls) {
      const n = stored.filter((m) => m.message.role === 'tool' && m.message.toolCallId === id).length;
      const lostToAFault = n === 0 && outcome.status === 'failed' && outcome.code === 'persistence_error';
      if (n !== 1 && !lostToAFault) this.violations.push(`tool call ${id} has ${n} stored results (outcome ${JSON.stringify(outcome)})`);
    }
    this.violations.push(...resultsOutOfOrder(stored));
    this.violations.push(...(await this.resultsWithoutAudit(stored)));
    if (outcome.status === 'timed_out') this.checkTimedOutCalls(turnId, stored);
    const row = await this.storage.getTurn(turnId);
    // A turn whose first write failed left nothing behind at all, which is consistent too.
    const neverStored = !row && outcome.status === 'failed' && outcome.code === 'persistence_error' && !stored.some((m) => m.turnId === turnId);
    // A terminal status whose write failed stays `running` until the next turn writes it (RT-26).
    const pendingRepair = terminalWriteFailed && row?.status === 'running';
    if (row?.status !== outcome.status && !neverStored && !pendingRepair) this.violations.push(`stored turn status ${row?.status} but outcome ${outcome.status}`);
  }

  /** RL-4: every stored tool result has exactly one audit row, keyed by it, and there is no other row. */
  private async resultsWithoutAudit(stored: StoredMessage[]): Promise<string[]> {
    const audited = (await this.storage.listAudit(this.session.id, { limit: 1_000 })).map((e) => `${e.id} ${e.toolCallId} ${e.status}`);
    const results = stored.flatMap(({ id, message }) => (message.role === 'tool' ? [`${id} ${message.toolCallId} ${message.status}`] : []));
    const expected = [...results].reverse();
    return JSON.stringify(audited) === JSON.stringify(expected) ? [] : [`audit rows ${JSON.stringify(audited)} but tool results ${JSON.stringify(expected)}`];
  }

  /** RL-3: a call the time limit cancelled says so; the user cancelled nothing in a turn that timed out. */
  private checkTimedOutCalls(turnId: string, stored: StoredMessage[]): void {
    for (const { turnId: owner, message } of stored) {
      if (owner === turnId && message.role === 'tool' && message.content === CANCELLED_BY_USER) {
        this.violations.push(`tool call ${message.toolCallId} of timed-out turn ${turnId} says '${CANCELLED_BY_USER}'`);
      }
    }
  }

  async close(): Promise<void> {
    await this.runtime.shutdown();
    rmSync(this.workspace, { recursive: true, force: true });
  }
}

/**
 * The storage under the fault decorator. A method can be held at a gate (`holding`: a world-state
 * write under way while an interrupt arrives), and every world-state message is checked as its
 * write completes: none may be stored after its turn announced `turn_finished` (a sampling the
 * interrupt aborted finishes its write under way before the turn ends, and writes nothing after).
 */
class WatchedStorage {
  readonly violations: string[] = [];
  /** Turns that announced `turn_finished`. */
  readonly finished = new Set<string>();
  private current: SessionStorage;
  private readonly writes = new Set<Promise<unknown>>();
  readonly storage: SessionStorage;

  constructor(private readonly base: SessionStorage) {
    this.current = base;
    // The fault decorator reads each method once: dispatch to the current storage on every call.
    this.storage = new Proxy(base, {
      get: (_target, prop) => {
        if (typeof Reflect.get(base, prop) !== 'function') return Reflect.get(base, prop);
        if (prop === 'appendMessage') return (message: StoredMessage, fence?: number, audit?: ToolAudit) => this.append(message, fence, audit);
        return (...args: unknown[]) => (Reflect.get(this.current, prop) as (...a: unknown[]) => unknown).apply(this.current, args);
      },
    });
  }

  hold(method: keyof SessionStorage): { reached: Promise<void>; release: () => void } {
    const held = holding(this.base, method);
    this.current = held.storage;
    return {
      reached: held.reached,
      release: () => {
        if (this.current === held.storage) this.current = this.base;
        held.release();
      },
    };
  }

  /** Every world-state write under way has landed (or failed). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.writes]);
  }

  private append(message: StoredMessage, fence?: number, audit?: ToolAudit): Promise<void> {
    const write = audit ? this.current.appendMessage(message, fence, audit) : this.current.appendMessage(message, fence);
    if (message.message.role !== 'user' || message.message.kind !== 'world_state') return write;
    const watched = write.then(() => {
      if (this.finished.has(message.turnId)) this.violations.push(`world-state message ${message.id} stored after turn_finished of ${message.turnId}`);
    });
    this.writes.add(watched);
    void watched.catch(() => undefined).finally(() => this.writes.delete(watched));
    return write;
  }
}

/** The results of each assistant message's calls are stored in the order of its calls (RT-12, RL-5). */
function resultsOutOfOrder(stored: StoredMessage[]): string[] {
  const position = new Map<string, number>();
  for (const { message } of stored) if (message.role === 'assistant') message.toolCalls.forEach((c, i) => position.set(c.id, i));
  const problems: string[] = [];
  let last: { id: string; at: number } | null = null;
  for (const { message } of stored) {
    if (message.role === 'assistant') last = null;
    if (message.role !== 'tool') continue;
    const at = position.get(message.toolCallId) ?? -1;
    if (last && at < last.at) problems.push(`the result of ${message.toolCallId} is stored after that of ${last.id}, a later call`);
    last = { id: message.toolCallId, at };
  }
  return problems;
}

/**
 * Every run of a path tool, as the tool sees it. A run — a read started ahead of its call (RL-5)
 * included — is over by the time its turn announces `turn_finished`: it answered, or its signal
 * was aborted. None starts after that, nor with its signal already aborted (a call the turn gave
 * up on runs nothing).
 */
class ToolRuns {
  constructor(private readonly violations: string[]) {}

  private readonly running = new Map<string, { turnId: string; signal: AbortSignal }>();
  private readonly ended = new Set<string>();

  start(turnId: string, toolCallId: string, signal: AbortSignal): () => void {
    if (this.ended.has(turnId)) this.violations.push(`tool call ${toolCallId} started after turn_finished of ${turnId}`);
    if (signal.aborted) this.violations.push(`tool call ${toolCallId} started with its signal already aborted`);
    this.running.set(toolCallId, { turnId, signal });
    return () => this.running.delete(toolCallId);
  }

  /** `turnId` announced `turn_finished`: none of its runs may still be going unaborted. */
  end(turnId: string): void {
    this.ended.add(turnId);
    for (const [id, run] of this.running) {
      if (run.turnId === turnId && !run.signal.aborted) this.violations.push(`tool call ${id} still running, unaborted, at turn_finished of ${turnId}`);
    }
  }
}

function pathTools(script: Script, runs: ToolRuns, beforeRun: (toolCallId: string) => Promise<void>) {
  const run = (name: string) => async (_args: unknown, ctx: { signal: AbortSignal; toolCallId: string; turnId: string }) => {
    const over = runs.start(ctx.turnId, ctx.toolCallId, ctx.signal);
    try {
      await beforeRun(ctx.toolCallId);
      return await script.toolResult(name, ctx.signal, ctx.toolCallId);
    } finally {
      over();
    }
  };
  const input = z.object({ path: z.string() });
  return [
    defineTool({ name: 'read_file', description: 'Read a file', effect: 'read', input, execute: run('read_file') }),
    defineTool({
      name: 'write_file',
      description: 'Write a file',
      effect: 'write',
      input,
      authorize: (args, ctx) => script.authorize?.(ctx.toolCallId) ?? { decision: 'ask', paths: [args.path] },
      execute: run('write_file'),
    }),
    defineTool({ name: 'run_cmd', description: 'Run a command', effect: 'execute', input, execute: run('run_cmd') }),
    defineTool({
      name: 'exploding',
      description: 'A tool whose schema throws while it checks the arguments',
      effect: 'read',
      input: input.refine(() => {
        throw new Error('the tool schema threw');
      }),
      execute: run('exploding'),
    }),
  ];
}
