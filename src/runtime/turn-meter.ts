import type { FinishReason } from '../protocol/model.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import { addUsage, type TokenUsage } from '../protocol/usage.js';
import type { SessionEnv } from './session-env.js';

/** What a running turn's model calls reported so far (memory only). */
export interface TurnMeter {
  usage?: TokenUsage;
  /** The latest response's: when the turn completes, the final answer's. */
  finishReason?: FinishReason;
  /** Compactions made inside the turn, for its span (issue 27). */
  compactions?: number;
}

/** Adds one model call's usage to its turn's sum, which the running snapshot shows at once. */
export function recordUsage(env: SessionEnv, turnId: string, usage: TokenUsage): void {
  const meter = meterOf(env, turnId);
  meter.usage = addUsage(meter.usage, usage);
  env.output.live.setUsage(turnId, meter.usage);
}

/** One more compaction inside the turn (CP-1). */
export function recordCompaction(env: SessionEnv, turnId: string): void {
  const meter = meterOf(env, turnId);
  meter.compactions = (meter.compactions ?? 0) + 1;
}

export function recordFinishReason(env: SessionEnv, turnId: string, finishReason: FinishReason | undefined): void {
  if (finishReason) meterOf(env, turnId).finishReason = finishReason;
}

/** Input plus output tokens the turn's model calls reported so far: what the token budget counts. */
export function turnTokens(env: SessionEnv, turnId: string): number {
  const usage = env.turns.turnMeters.get(turnId)?.usage;
  return usage ? usage.inputTokens + usage.outputTokens : 0;
}

/**
 * The outcome with what the turn's calls reported: the summed usage on any outcome, the final
 * response's finish reason on a completed one. The meter is then forgotten.
 */
export function withTurnMeter(env: SessionEnv, turnId: string, outcome: TurnOutcome): TurnOutcome {
  const meter = env.turns.turnMeters.get(turnId);
  env.turns.turnMeters.delete(turnId);
  if (!meter) return outcome;
  const finishReason = outcome.status === 'completed' && meter.finishReason ? { finishReason: meter.finishReason } : {};
  return { ...outcome, ...finishReason, ...(meter.usage && { usage: meter.usage }) };
}

function meterOf(env: SessionEnv, turnId: string): TurnMeter {
  let meter = env.turns.turnMeters.get(turnId);
  if (!meter) {
    meter = {};
    env.turns.turnMeters.set(turnId, meter);
  }
  return meter;
}
