import type { ModelRequest, RequestMessage } from '../protocol/model.js';
import { estimateTokens } from '../protocol/token-estimate.js';

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
const sizes = new WeakMap<RequestMessage, number>();

/** UTF-8 bytes of one request message's JSON, measured once per message object. */
export function messageBytes(message: RequestMessage): number {
  let size = sizes.get(message);
  if (size === undefined) {
    size = Buffer.byteLength(JSON.stringify(message), 'utf8');
    sizes.set(message, size);
  }
  return size;
}

/**
 * Tokens of the conversation region: the same `ceil(JSON bytes / 4)` as measuring the array at once
 * (`[` + items joined by `,` + `]`), from per-message sizes measured once per message.
 */
export function conversationTokens(messages: readonly RequestMessage[]): number {
  let bytes = 0;
  for (const message of messages) bytes += messageBytes(message);
  return conversationTokensOf(messages.length, bytes);
}

/** `conversationTokens` from a message count and the sum of their sizes, kept up to date by the caller. */
export function conversationTokensOf(count: number, messageBytesTotal: number): number {
  return Math.ceil((2 + Math.max(0, count - 1) + messageBytesTotal) / 4);
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
