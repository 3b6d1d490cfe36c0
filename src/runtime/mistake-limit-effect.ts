import { z } from 'zod';
import { mistakeLimitStopMessage } from '../../machines/guardrails.js';
import type { MistakeDecision, MistakeLimitInput } from '../../machines/turn.effects.js';
import { TurnFailure } from '../protocol/tool-result.js';
import { EffectAborted, untilAborted } from './effect-aborted.js';
import type { EffectCancellation } from './effect-port.js';
import { mistakeDecisionSchema, type MistakeLimitDecision } from './guardrail-profiles.js';
import { persistAndAppend, type RuntimeDeps, type SessionEnv } from './session-env.js';
import { messageOf } from '../protocol/error-message.js';

/**
 * GR-2's effect: the turn chart decided the breaker tripped; the agent's `onMistakeLimit` says what
 * now. Its guidance is written as a user-side note before the next model call, its stop message as
 * the turn's final answer. Without a callback the seed's default holds: stop, with an explanatory
 * message (`mistakeLimitStopMessage`) as the final answer. A callback that throws or answers neither
 * of the two is a host defect and fails closed: the turn fails `mistake_limit`. A cancel aborts the
 * callback's signal and stops waiting for it; a write already under way finishes first.
 */
export function consultMistakeLimitEffect(deps: RuntimeDeps) {
  return async (input: MistakeLimitInput, cancellation: EffectCancellation): Promise<MistakeDecision> => {
    const env = deps.env(input.sessionId);
    const callback = env.config.agent.onMistakeLimit;
    const tripped = `${input.count} model steps in a row had every tool call fail`;
    if (cancellation.aborted) throw new EffectAborted('onMistakeLimit');
    if (!callback) return stop(env, deps, input.turnId, mistakeLimitStopMessage(input.count, input.lastErrors));
    const asked = Promise.resolve().then(() =>
      callback({ sessionId: input.sessionId, turnId: input.turnId, count: input.count, lastErrors: input.lastErrors, signal: cancellation.signal }),
    );
    const answer = await untilAborted(asked, cancellation).catch((error: unknown) => {
      if (error instanceof EffectAborted) throw new EffectAborted('onMistakeLimit');
      throw new TurnFailure('mistake_limit', `${tripped}, and onMistakeLimit failed: ${messageOf(error)}`);
    });
    const decision = parseDecision(answer, tripped);
    if (decision.action === 'continue') {
      await persistAndAppend(env, deps, input.turnId, { role: 'user', kind: 'guardrail_note', text: decision.guidance });
      return { action: 'continue' };
    }
    return stop(env, deps, input.turnId, decision.message);
  };
}

/** The stop message is the turn's answer: written and appended like any assistant message, then the turn completes with it. */
async function stop(env: SessionEnv, deps: RuntimeDeps, turnId: string, message: string): Promise<MistakeDecision> {
  await persistAndAppend(env, deps, turnId, { role: 'assistant', text: message, reasoning: '', toolCalls: [] });
  return { action: 'stop', message };
}

function parseDecision(answer: unknown, tripped: string): MistakeLimitDecision {
  const parsed = mistakeDecisionSchema.safeParse(answer);
  if (parsed.success) return parsed.data;
  throw new TurnFailure('mistake_limit', `${tripped}, and onMistakeLimit answered neither { action: 'continue', guidance } nor { action: 'stop', message }: ${z.prettifyError(parsed.error)}`);
}
