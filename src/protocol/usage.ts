/** Tokens a model call cost, as the provider reported them; a turn's outcome carries their sum. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of the input, how much was read from the provider's prompt cache. */
  cachedInputTokens: number;
  /** Of the output, how much was reasoning. */
  reasoningTokens: number;
}

export function addUsage(total: TokenUsage | undefined, call: TokenUsage): TokenUsage {
  if (!total) return { ...call };
  return {
    inputTokens: total.inputTokens + call.inputTokens,
    outputTokens: total.outputTokens + call.outputTokens,
    cachedInputTokens: total.cachedInputTokens + call.cachedInputTokens,
    reasoningTokens: total.reasoningTokens + call.reasoningTokens,
  };
}
