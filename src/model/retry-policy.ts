import { ModelCallError } from '../protocol/model.js';
import type { ClassifiedError } from './provider-errors.js';

export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** The first backoff; each retry doubles it, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A provider asking for a longer wait than this is not retried: the turn fails at once instead. */
  maxRetryAfterMs: number;
  /** In [0, 1): the jitter's source. */
  random: () => number;
}

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; error: ModelCallError };

/**
 * After failed attempt number `retries` (0 for the first): wait and retry, or give up with the error
 * the runtime sees. A provider's retry-after is honoured as given; otherwise exponential backoff with
 * "equal jitter" (between half and all of it), so clients that failed together do not retry together.
 */
export function decideRetry(failure: ClassifiedError, retries: number, policy: RetryPolicy): RetryDecision {
  if (!failure.retryable || retries >= policy.maxRetries) return { retry: false, error: withRetries(failure.error, retries, '') };
  if (failure.retryAfterMs !== undefined) {
    if (failure.retryAfterMs <= policy.maxRetryAfterMs) return { retry: true, delayMs: failure.retryAfterMs };
    return { retry: false, error: withRetries(failure.error, retries, `; the provider asked to retry after ${failure.retryAfterMs} ms, longer than the ${policy.maxRetryAfterMs} ms allowed`) };
  }
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retries);
  return { retry: true, delayMs: backoff / 2 + (policy.random() * backoff) / 2 };
}

function withRetries(error: ModelCallError, retries: number, note: string): ModelCallError {
  if (retries === 0 && note === '') return error;
  const tried = retries > 0 ? ` (after ${retries} ${retries === 1 ? 'retry' : 'retries'}${note})` : ` (${note.slice(2)})`;
  return new ModelCallError(error.kind, `${error.message}${tried}`, error.semanticOutputProduced);
}
