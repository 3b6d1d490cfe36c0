import { estimateTokens } from '../protocol/commands.js';
import type { ModelRequest } from '../protocol/model.js';

/** CW-7: per-region estimates of the request actually submitted, a token per four bytes of JSON. */
export interface ContextBudgetEstimate {
  systemContextTokens: number;
  conversationTokens: number;
  toolSurfaceTokens: number;
  estimatedInputTokens: number;
  reservedOutputTokens: number;
}

/** Measures; never changes the request. Artifacts are not in a request, so they never count. */
export function measureBudget(request: ModelRequest): ContextBudgetEstimate {
  const systemContextTokens = estimateTokens(request.system);
  const conversationTokens = estimateTokens(request.messages);
  const toolSurfaceTokens = estimateTokens(request.tools);
  return {
    systemContextTokens,
    conversationTokens,
    toolSurfaceTokens,
    estimatedInputTokens: systemContextTokens + conversationTokens + toolSurfaceTokens,
    reservedOutputTokens: request.maxOutputTokens,
  };
}
