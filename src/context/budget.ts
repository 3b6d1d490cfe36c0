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
  return budgetFrom(estimateTokens(request.system), estimateTokens(request.messages), estimateTokens(request.tools), request.maxOutputTokens);
}

/** The estimate from its three region counts: their sum is the input, the model's max output is reserved. */
export function budgetFrom(systemContextTokens: number, conversationTokens: number, toolSurfaceTokens: number, reservedOutputTokens: number): ContextBudgetEstimate {
  return {
    systemContextTokens,
    conversationTokens,
    toolSurfaceTokens,
    estimatedInputTokens: systemContextTokens + conversationTokens + toolSurfaceTokens,
    reservedOutputTokens,
  };
}
