import type { TurnContext } from '../../machines/turn.machine.js';
import type { ClearedCall } from '../../machines/tool-call.contract.js';
import type { LoopRules, LoopTracker } from '../../machines/guardrails.js';
import type { DispatchOutcome, ExecutedResult } from '../../machines/tool-call.effects.js';
import { parseArguments } from '../../machines/signature.js';
import { loopRulesOf, observeCall } from '../../machines/guardrails.js';
import { NOT_EXECUTED_RESULT_TEXT, type ToolCallPart } from '../protocol/messages.js';
import type { Toolset } from '../tools/toolset.js';
import type { EffectCancellation } from './effect-port.js';
import { EffectSignal } from './effect-signal.js';
import type { SessionEnv } from './session-env.js';
import { messageOf } from '../protocol/error-message.js';
import { modeForbids, modeRequiresApproval } from '../tools/permission-policy.js';

/**
 * A call started ahead of its tool-call chart (RL-5): its result, and the signal a cancel aborts.
 * Issue 30: writes and commands too; `dispatch` is what the session's `beforeToolDispatch` hooks
 * decided for it (they run per call, before its tool), which its chart takes instead of asking
 * again; `effect` is its tool's; `settled` is set once its run ended.
 */
export interface StartedRead {
  signal: EffectSignal;
  result: Promise<ExecutedResult>;
  dispatch: Promise<DispatchOutcome> | null;
  effect: 'read' | 'write' | 'execute';
  settled: boolean;
  /**
   * Issue 30: a call of an approval batch, started as it was cleared: its run wrote its durable start
   * and its audit times itself, so the chart that takes it up only waits for its result.
   */
  cleared: boolean;
}

export type RunRead = (
  sessionId: string,
  turnId: string,
) => (call: ToolCallPart, args: Record<string, unknown>, cancellation: EffectCancellation) => Promise<ExecutedResult>;

/**
 * Issue 30: runs a call of an approval batch as it is cleared, with the arguments and paths its
 * chart decided on: its durable start (after an approval) first, its audit times, its progress updates.
 */
export type RunCleared = (
  sessionId: string,
  turnId: string,
) => (call: ToolCallPart, cleared: ClearedCall, cancellation: EffectCancellation) => Promise<ExecutedResult>;

/** Issue 30: the session's `beforeToolDispatch` hooks for one call, as its chart's `before_dispatch` runs them. */
export type RunDispatchHooks = (
  sessionId: string,
  turnId: string,
) => (call: ToolCallPart, args: Record<string, unknown>, cancellation: EffectCancellation) => Promise<DispatchOutcome>;

/**
 * RL-5: the calls of one response that may run side by side. A call qualifies when the agent allows
 * parallel calls, its tool is one of the agent's registry tools with no `authorize` hook, nothing
 * would ask the user about it or refuse it — no permission rule that denies or asks (a rule's allow
 * lets it through where the mode would ask), no session mode that forbids its effect or asks for
 * an approval (issue 30: writes and commands in `auto`, not only reads) — and it has not been
 * started yet. Only a run of at least two consecutive qualifying calls is worth starting ahead; a call
 * that asks for an approval ends the run, and the calls after it start once it is answered.
 */
export class ParallelReads {
  constructor(
    private readonly toolset: Toolset,
    private readonly runRead: RunRead,
    private readonly runDispatchHooks: RunDispatchHooks,
    private readonly runCleared: RunCleared,
  ) {}

  /**
   * Issue 30: how many calls from `from` make an approval batch — 0 for none. With parallel calls
   * on, in a session that can ask, a batch is the longest run of consecutive calls that would run
   * once cleared: registry tools without an `authorize` hook (their own ask is not known ahead),
   * arguments that pass, no rule or mode that refuses them, under the loop's stop (counted from
   * `loop`, the count before the first of them). It is worth asking ahead only with at least two
   * calls, one of which asks for an approval (else the calls need no clearing: a run of RL-5 starts them).
   * Dispatch hooks run in each call's chart as it is cleared; what they deny is written in order too.
   */
  approvalBatchLength(env: SessionEnv, calls: readonly ToolCallPart[], from: number, loop: LoopTracker, rules: LoopRules): number {
    if (env.config.agent.parallelToolCalls <= 1 || env.config.nonInteractive) return 0;
    let length = 0;
    let asks = false;
    let tracker = loop;
    for (let i = from; i < calls.length; i++) {
      const call = calls[i]!;
      const ask = this.clearance(env, call);
      if (ask === null) break;
      const args = this.validArguments(env, call);
      if (!args) break;
      const observed = observeCall(tracker, call.name, args, rules);
      if (observed.verdict?.level === 'hard') break;
      tracker = observed.tracker;
      asks ||= ask;
      length += 1;
    }
    return length >= 2 && asks ? length : 0;
  }

  /**
   * Issue 30: starts a held call its chart cleared to run, within the agent's bound of calls at once
   * for the turn; calls cleared while the bound is reached wait, in the order they were cleared.
   */
  startCleared(env: SessionEnv, context: TurnContext, call: ToolCallPart, cleared: ClearedCall): void {
    const signal = new EffectSignal();
    const effect = this.toolset.toolFor(env.config.agent, call.name)?.effect ?? 'execute';
    const started: StartedRead = { signal, result: Promise.resolve(NOT_RUN), dispatch: null, effect, settled: false, cleared: true };
    const run = this.runCleared(context.sessionId, context.turnId);
    started.result = slotsOf(env, context.turnId, env.config.agent.parallelToolCalls)
      .run(() => (signal.aborted ? Promise.resolve(NOT_RUN) : run(call, cleared, signal)))
      .catch((error: unknown): ExecutedResult => ({ status: 'failed', content: `tool error: ${messageOf(error)}` }))
      .then((result) => {
        started.settled = true;
        return result;
      });
    env.turns.startedReads.set(call.id, started);
  }

  /** Issue 30: whether a call could be in an approval batch — true when it asks for an approval, false when it needs none — or null when it cannot. */
  private clearance(env: SessionEnv, call: ToolCallPart): boolean | null {
    const tool = this.toolset.toolFor(env.config.agent, call.name);
    if (tool === undefined || tool.authorize !== undefined || env.turns.startedReads.has(call.id)) return null;
    const mode = env.config.permissionMode;
    if (modeForbids(mode, tool.effect)) return null;
    const rule = env.config.permissions.empty ? null : env.config.permissions.decide(call.name);
    if (rule !== null) return rule.decision === 'deny' ? null : rule.decision === 'ask';
    return modeRequiresApproval(mode, tool.effect);
  }

  /**
   * Whether the calls from `from` on begin such a run. Issue 30: `beforeToolDispatch` hooks no
   * longer keep calls serial: each started call runs them first, and its tool only if they let it.
   */
  beginsRun(env: SessionEnv, context: TurnContext, from: number): boolean {
    return env.config.agent.parallelToolCalls > 1 && this.runLength(env, context, from) >= 2;
  }

  /**
   * Starts the run beginning at the context's current call, at most the agent's bound at once. The
   * loop rules count the calls in provider order, as the charts will: a call that would reach a
   * stop is not started, nor any after it; neither is one whose arguments fail.
   */
  start(env: SessionEnv, context: TurnContext): void {
    const calls = context.response?.toolCalls ?? [];
    const run = calls.slice(context.toolIndex, context.toolIndex + this.runLength(env, context, context.toolIndex));
    const read = this.runRead(context.sessionId, context.turnId);
    const hooked = env.config.hooks.beforeToolDispatch.length > 0;
    const dispatchHooks = this.runDispatchHooks(context.sessionId, context.turnId);
    let loop = context.loop;
    const rules = loopRulesOf(context.limits);
    const queue: (() => void)[] = [];
    let active = 0;
    const next = () => {
      active -= 1;
      queue.shift()?.();
    };
    for (const call of run) {
      const args = this.validArguments(env, call);
      if (!args) break;
      const observed = observeCall(loop, call.name, args, rules);
      loop = observed.tracker;
      if (observed.verdict?.level === 'hard') break;
      const signal = new EffectSignal();
      const effect = this.toolset.toolFor(env.config.agent, call.name)!.effect;
      // The hooks decide first, per call, as its chart would ask them: a denial or a failed hook means the tool never runs.
      let decided: (outcome: Promise<DispatchOutcome>) => void = () => undefined;
      const dispatch = hooked ? new Promise<DispatchOutcome>((resolve) => (decided = resolve)) : null;
      // The chart reads the hooks' failure from its own `before_dispatch`: not an unhandled rejection here.
      void dispatch?.catch(() => undefined);
      const started: StartedRead = { signal, result: Promise.resolve(NOT_RUN), dispatch, effect, settled: false, cleared: false };
      started.result = new Promise<ExecutedResult>((resolve) => {
        const begin = () => {
          // Given up on while it waited for a slot (the call was skipped, the turn ended): it never starts.
          if (signal.aborted) {
            decided(Promise.resolve({ decision: 'deny', reason: 'the turn ended before the call started' }));
            resolve(NOT_RUN);
            queue.shift()?.();
            return;
          }
          active += 1;
          void this.afterHooks(hooked ? dispatchHooks(call, args, signal) : null, decided, (runArgs) => read(call, runArgs ?? args, signal))
            .catch((error: unknown): ExecutedResult => ({ status: 'failed', content: `tool error: ${messageOf(error)}` }))
            .then((result) => {
              started.settled = true;
              resolve(result);
            })
            .finally(next);
        };
        if (active < env.config.agent.parallelToolCalls) begin();
        else queue.push(begin);
      });
      env.turns.startedReads.set(call.id, started);
    }
  }

  /** The hooks' outcome (handed to the chart as soon as it is known), then the tool with the arguments they let through; none when they did not. */
  private async afterHooks(
    hooks: Promise<DispatchOutcome> | null,
    decided: (outcome: Promise<DispatchOutcome>) => void,
    run: (args: Record<string, unknown> | undefined) => Promise<ExecutedResult>,
  ): Promise<ExecutedResult> {
    if (!hooks) return run(undefined);
    decided(hooks);
    const outcome = await hooks.catch(() => null);
    if (outcome === null || outcome.decision === 'deny' || outcome.decision === 'invalid_rewrite') return NOT_RUN;
    return run(outcome.decision === 'rewrite' ? outcome.args : undefined);
  }

  private runLength(env: SessionEnv, context: TurnContext, from: number): number {
    const calls = context.response?.toolCalls ?? [];
    let length = 0;
    while (from + length < calls.length && this.qualifies(env, calls[from + length]!)) length += 1;
    return length;
  }

  private qualifies(env: SessionEnv, call: ToolCallPart): boolean {
    const tool = this.toolset.toolFor(env.config.agent, call.name);
    if (tool === undefined || tool.authorize !== undefined || env.turns.startedReads.has(call.id)) return false;
    // As the chart's `MODE_DECIDES`: a rule's deny or ask (issue 24) must decide before it runs; a rule's allow stands where the mode would ask.
    const rule = env.config.permissions.empty ? null : env.config.permissions.decide(call.name);
    const mode = env.config.permissionMode;
    if (modeForbids(mode, tool.effect)) return false;
    if (rule !== null) return rule.decision === 'allow';
    return !modeRequiresApproval(mode, tool.effect);
  }

  /**
   * The arguments, if they pass the tool's schema. A schema that throws is left to the call's own
   * chart, which reports it (RT-12): thrown here, it would crash the turn inside its action.
   */
  private validArguments(env: SessionEnv, call: ToolCallPart): Record<string, unknown> | undefined {
    const parsed = parseArguments(call.argumentsText);
    const schema = this.toolset.toolFor(env.config.agent, call.name)?.input;
    if (!parsed || !schema) return undefined;
    try {
      const valid = schema.safeParse(parsed);
      return valid.success ? (valid.data as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
}

/** What a started call that never ran (the hooks refused it, the turn gave up on it) answers; its chart writes its own result. */
const NOT_RUN: ExecutedResult = { status: 'cancelled', content: NOT_EXECUTED_RESULT_TEXT };

/** The started read of a call, taken over by its chart: a cancel of the call now aborts the read. */
export function joinStartedRead(read: StartedRead, cancellation: EffectCancellation): Promise<ExecutedResult> {
  if (cancellation.aborted) read.signal.abort();
  else if (!read.signal.aborted) cancellation.signal.addEventListener('abort', () => read.signal.abort(), { once: true });
  return read.result;
}

/** Aborts the reads of calls that will not be reached (the turn ended, or they were skipped). */
export function abandonStartedReads(env: SessionEnv, callIds?: readonly string[]): void {
  for (const id of callIds ?? [...env.turns.startedReads.keys()]) {
    env.turns.startedReads.get(id)?.signal.abort();
    env.turns.startedReads.delete(id);
  }
}

/**
 * Issue 30: the bound on a turn's calls started as they were cleared: at most `limit` run at once,
 * the rest wait in the order they were cleared. One per session, for its running turn.
 */
export class CallSlots {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly turnId: string,
    private readonly limit: number,
  ) {}

  run<T>(task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const begin = () => {
        this.active += 1;
        task()
          .then(resolve, reject)
          .finally(() => {
            this.active -= 1;
            this.waiting.shift()?.();
          });
      };
      if (this.active < this.limit) begin();
      else this.waiting.push(begin);
    });
  }
}

function slotsOf(env: SessionEnv, turnId: string, limit: number): CallSlots {
  if (env.turns.callSlots?.turnId !== turnId) env.turns.callSlots = new CallSlots(turnId, limit);
  return env.turns.callSlots;
}
