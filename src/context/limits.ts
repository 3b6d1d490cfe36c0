import type { ModelCapabilities } from '../protocol/model.js';

/** CW-7: the summary a compaction asks for is capped at this many output tokens. */
export const SUMMARY_OUTPUT_LIMIT = 16_384;

/** What a model's capabilities allow as input, and where automatic compaction starts (CW-7). */
export interface ModelContextLimits {
  effectiveInputTokens: number;
  autoCompactTokenLimit: number;
  reservedOutputTokens: number;
}

export function contextLimits(capabilities: ModelCapabilities): ModelContextLimits {
  const effectiveInputTokens = Math.max(0, capabilities.contextWindow - capabilities.maxOutputTokens - (capabilities.maxReasoningTokens || 0));
  return {
    effectiveInputTokens,
    autoCompactTokenLimit: Math.ceil(effectiveInputTokens * 0.85),
    reservedOutputTokens: capabilities.maxOutputTokens,
  };
}

/** The trigger: estimated input plus reserved output reaches the smaller of the line and the usable input. */
export function reachesCompactionLine(estimatedInputTokens: number, limits: ModelContextLimits): boolean {
  return estimatedInputTokens + limits.reservedOutputTokens >= Math.min(limits.autoCompactTokenLimit, limits.effectiveInputTokens);
}
