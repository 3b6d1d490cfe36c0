import type { TurnContext } from '../../machines/turn.machine.js';
import { parseArguments } from '../../machines/signature.js';
import { loopRulesOf, observeCall } from '../../machines/guardrails.js';
import { NOT_EXECUTED_RESULT_TEXT, type ToolCallPart } from '../protocol/messages.js';
import type { ToolResult } from '../protocol/tool-result.js';
import type { Toolset } from '../tools/toolset.js';
import type { EffectCancellation } from './effect-port.js';
import { EffectSignal } from './effect-signal.js';
import type { SessionEnv } from './session-env.js';
import { messageOf } from '../protocol/error-message.js';

/** A read started ahead of its tool-call chart: its result, and the signal a cancel aborts. */
export interface StartedRead {
  signal: EffectSignal;
  result: Promise<ToolResult>;
}

export type RunRead = (
  sessionId: string,
  turnId: string,
) => (call: ToolCallPart, args: Record<string, unknown>, cancellation: EffectCancellation) => Promise<ToolResult>;

/**
 * RL-5: the reads of one response that may run side by side. A call qualifies when the agent allows
 * parallel calls, its tool is one of the agent's registry tools declaring `effect: 'read'` with no
 * `authorize` hook and no permission rule that denies or asks about it (no session mode asks about
 * a read, so it then needs no approval), and it has not been started yet.
 * Only a run of at least two consecutive qualifying calls is worth starting ahead.
 */
export class ParallelReads {
  constructor(
    private readonly toolset: Toolset,
    private readonly runRead: RunRead,
  ) {}

  /**
   * Whether the calls from `from` on begin such a run. Never with `beforeToolDispatch` hooks (RL-4):
   * a read started ahead would run before the hook could deny or rewrite it.
   */
  beginsRun(env: SessionEnv, context: TurnContext, from: number): boolean {
    return env.config.agent.parallelToolCalls > 1 && env.config.hooks.beforeToolDispatch.length === 0 && this.runLength(env, context, from) >= 2;
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
      const result = new Promise<ToolResult>((resolve) => {
        const begin = () => {
          // Given up on while it waited for a slot (the call was skipped, the turn ended): it never starts.
          if (signal.aborted) {
            resolve({ status: 'cancelled', content: NOT_EXECUTED_RESULT_TEXT });
            queue.shift()?.();
            return;
          }
          active += 1;
          void read(call, args, signal)
            .catch((error: unknown): ToolResult => ({ status: 'failed', content: `tool error: ${messageOf(error)}` }))
            .then(resolve)
            .finally(next);
        };
        if (active < env.config.agent.parallelToolCalls) begin();
        else queue.push(begin);
      });
      env.turns.startedReads.set(call.id, { signal, result });
    }
  }

  private runLength(env: SessionEnv, context: TurnContext, from: number): number {
    const calls = context.response?.toolCalls ?? [];
    let length = 0;
    while (from + length < calls.length && this.qualifies(env, calls[from + length]!)) length += 1;
    return length;
  }

  private qualifies(env: SessionEnv, call: ToolCallPart): boolean {
    const tool = this.toolset.toolFor(env.config.agent, call.name);
    if (tool === undefined || tool.effect !== 'read' || tool.authorize !== undefined || env.turns.startedReads.has(call.id)) return false;
    // A permission rule that denies or asks about the read (issue 24) must decide before it runs.
    const rule = env.config.permissions.empty ? null : env.config.permissions.decide(call.name);
    return rule === null || rule.decision === 'allow';
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

/** The started read of a call, taken over by its chart: a cancel of the call now aborts the read. */
export function joinStartedRead(read: StartedRead, cancellation: EffectCancellation): Promise<ToolResult> {
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
