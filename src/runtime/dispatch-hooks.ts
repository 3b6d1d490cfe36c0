import { z } from 'zod';
import type { AfterDispatchInput, DispatchOutcome, ToolEffectInput, ValidationOutput } from '../../machines/tool-call.effects.js';
import type { EffectCancellation } from './effect-port.js';
import { invalidAnswer, runHook } from './hook-runner.js';
import { dispatchDecisionSchema, type ToolHookContext } from './hooks.js';
import type { RuntimeDeps, SessionEnv } from './session-env.js';

/**
 * The tool-call chart's hook effects (RL-4). `beforeToolDispatch` runs the runtime's hook, then the
 * agent's: a denial stops there, a rewrite is checked against the tool's schema before the next
 * hook sees it. `afterToolDispatch` shows each hook a copy of the result. A hook that throws, answers
 * what it may not or passes its time limit rejects with a `HookError`: the chart fails the call closed.
 */
export function dispatchHookEffects(deps: RuntimeDeps, validate: (input: ToolEffectInput, args: Record<string, unknown>) => ValidationOutput) {
  const beforeToolDispatch = async (input: ToolEffectInput, cancellation: EffectCancellation): Promise<DispatchOutcome> => {
    const env = deps.env(input.sessionId);
    let args = input.args;
    let rewritten = false;
    for (const hook of env.config.hooks.beforeToolDispatch) {
      const answer = await runHook('beforeToolDispatch', hook, cancellation, deps.clock, (signal) => hook.run(hookContext(env, input, args, signal)));
      const parsed = dispatchDecisionSchema.safeParse(answer);
      if (!parsed.success) throw invalidAnswer('beforeToolDispatch', hook, z.prettifyError(parsed.error));
      const decision = parsed.data;
      if (decision?.decision === 'deny') return { decision: 'deny', reason: decision.reason ?? `the ${hook.owner}'s hook refused the call` };
      if (decision?.decision !== 'rewrite') continue;
      const checked = validate(input, decision.args);
      if (!checked.ok) return { decision: 'invalid_rewrite', message: `the ${hook.owner}'s hook rewrote the arguments into ones the tool refuses: ${checked.message}` };
      args = checked.args;
      rewritten = true;
    }
    return rewritten ? { decision: 'rewrite', args } : { decision: 'allow' };
  };

  const afterToolDispatch = async (input: AfterDispatchInput, cancellation: EffectCancellation): Promise<void> => {
    const env = deps.env(input.sessionId);
    for (const hook of env.config.hooks.afterToolDispatch) {
      await runHook('afterToolDispatch', hook, cancellation, deps.clock, (signal) =>
        hook.run({ ...hookContext(env, input, input.args, signal), result: { status: input.result.status, content: input.result.content } }),
      );
    }
  };

  return { beforeToolDispatch, afterToolDispatch };
}

/** A fresh copy of the arguments for each hook: what a hook does to it never reaches the call. */
function hookContext(env: SessionEnv, input: ToolEffectInput, args: Record<string, unknown>, signal: AbortSignal): ToolHookContext {
  return {
    sessionId: input.sessionId,
    turnId: input.turnId,
    agent: env.config.agentName,
    mode: env.config.permissionMode,
    signal,
    toolCallId: input.toolCallId,
    toolName: input.name,
    args: structuredClone(args),
  };
}
