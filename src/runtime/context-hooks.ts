import { z } from 'zod';
import type { SampleInput } from '../../machines/turn.effects.js';
import { type PreparedModelCall } from '../context/engine.js';
import type { SystemPart } from '../protocol/model.js';
import type { EffectCancellation } from './effect-port.js';
import { HookError, invalidAnswer, runHook } from './hook-runner.js';
import { contextHookResultSchema, type ContextHookContext, type HookStage, type ResolvedHook } from './hooks.js';
import type { RuntimeDeps, SessionEnv } from './session-env.js';
import { SYSTEM_PART_TOKEN_LIMIT } from '../protocol/item-limits.js';
import { estimateTokens } from '../protocol/token-estimate.js';

/**
 * RL-4's context hooks, run inside the context-build step (`preparing`) of every model call:
 * `beforeContextBuild` before the request is built, `afterContextBuild` with a copy of the request
 * as built. Both may add system parts after the turn's own. A part is author-controlled text, so
 * CW-8 applies: one over its limit is refused, never trimmed — and since the hook is at fault, the
 * turn fails `hook_failed` rather than `model_protocol_error`.
 */
export function contextHooks(deps: RuntimeDeps) {
  /** The system context of this call: the turn's own, plus what the `beforeContextBuild` hooks add. */
  const before = async (env: SessionEnv, input: SampleInput, cancellation: EffectCancellation): Promise<readonly SystemPart[]> => {
    let system = env.conversation.turnSystem;
    for (const hook of env.config.hooks.beforeContextBuild) {
      const answer = await runHook('beforeContextBuild', hook, cancellation, deps.clock, (signal) => hook.run(hookContext(env, input, signal)));
      system = withParts(system, partsOf('beforeContextBuild', hook, answer));
    }
    return system;
  };

  /** The system context after the `afterContextBuild` hooks; the same array when none added anything. */
  const after = async (
    env: SessionEnv,
    input: SampleInput,
    prepared: PreparedModelCall,
    system: readonly SystemPart[],
    cancellation: EffectCancellation,
  ): Promise<readonly SystemPart[]> => {
    for (const hook of env.config.hooks.afterContextBuild) {
      const answer = await runHook('afterContextBuild', hook, cancellation, deps.clock, (signal) =>
        hook.run({
          ...hookContext(env, input, signal),
          request: structuredClone(prepared.request),
          estimatedInputTokens: prepared.budget.estimatedInputTokens,
        }),
      );
      system = withParts(system, partsOf('afterContextBuild', hook, answer));
    }
    return system;
  };

  return { before, after };
}

function hookContext(env: SessionEnv, input: SampleInput, signal: AbortSignal): ContextHookContext {
  return { sessionId: input.sessionId, turnId: input.turnId, agent: env.config.agentName, mode: env.config.permissionMode, signal, modelCallIndex: input.modelCallIndex };
}

/** The parts a hook's answer adds, each held to what `prepare` would check, and to CW-8. */
function partsOf(stage: HookStage, hook: ResolvedHook<unknown>, answer: unknown): { parts: SystemPart[]; stage: HookStage; hook: ResolvedHook<unknown> } {
  const parsed = contextHookResultSchema.safeParse(answer);
  if (!parsed.success) throw invalidAnswer(stage, hook, z.prettifyError(parsed.error));
  return { parts: parsed.data?.systemParts ?? [], stage, hook };
}

function withParts(system: readonly SystemPart[], added: { parts: SystemPart[]; stage: HookStage; hook: ResolvedHook<unknown> }): readonly SystemPart[] {
  const { parts, stage, hook } = added;
  if (parts.length === 0) return system;
  const keys = new Set(system.map((part) => part.key));
  for (const part of parts) {
    if (keys.has(part.key)) throw invalidAnswer(stage, hook, `the system part key '${part.key}' is already used`);
    keys.add(part.key);
    if (part.content.trim() === '') throw invalidAnswer(stage, hook, `the system part '${part.key}' is empty`);
    const tokens = estimateTokens(part.content);
    if (tokens >= SYSTEM_PART_TOKEN_LIMIT) {
      throw new HookError(
        'hook_failed',
        stage,
        `SystemPartTooLarge: the system part '${part.key}' added by the ${stage} hook of the ${hook.owner} estimates ${tokens} tokens (limit ${SYSTEM_PART_TOKEN_LIMIT}); it is refused, not trimmed`,
      );
    }
  }
  return [...system, ...parts.map((part) => ({ key: part.key, content: part.content }))];
}
