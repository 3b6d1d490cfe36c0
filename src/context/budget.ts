import { estimateTokens } from '../protocol/commands.js';
import type { ModelRequest, RequestMessage } from '../protocol/model.js';

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

/** Serialized size of each request message, kept while the message object lives (they are shared across calls). */
const messageBytes = new WeakMap<RequestMessage, number>();

/**
 * Tokens of the conversation region: the same `ceil(JSON bytes / 4)` as measuring the array at once
 * (`[` + items joined by `,` + `]`), from per-message sizes measured once per message.
 */
export function conversationTokens(messages: readonly RequestMessage[]): number {
  let bytes = 2 + Math.max(0, messages.length - 1);
  for (const message of messages) {
    let size = messageBytes.get(message);
    if (size === undefined) {
      size = Buffer.byteLength(JSON.stringify(message), 'utf8');
      messageBytes.set(message, size);
    }
    bytes += size;
  }
  return Math.ceil(bytes / 4);
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
