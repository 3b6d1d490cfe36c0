import { APICallError, getErrorMessage } from '@ai-sdk/provider';
import { ModelCallError } from '../protocol/model.js';

/**
 * What providers say when the request is bigger than the model's window: OpenAI and vLLM
 * ("maximum context length", `context_length_exceeded`), Anthropic ("prompt is too long"),
 * Gemini ("exceeds the maximum number of tokens"), Ollama ("context length"), Groq ("reduce the
 * length of the messages"), Mistral ("too large for model with … maximum context length").
 */
const OVERFLOW =
  /context[ _]length|maximum context|context[ _]window|too many tokens|prompt is too long|input is too long|exceeds the maximum number of tokens|reduce the length of the messages/i;

/** Statuses an overflow comes with: a bad request, or a request body too large (HTTP 413). */
const OVERFLOW_STATUSES = new Set([400, 413]);

/** A 429 that waiting will not cure: the account is out of credit. */
const NOT_TRANSIENT = /insufficient_quota|billing/i;

/** A failed attempt: the error the runtime gets, and whether another attempt may succeed. */
export interface ClassifiedError {
  error: ModelCallError;
  retryable: boolean;
  /** What the provider asked for (`retry-after-ms`, `retry-after`), in ms. */
  retryAfterMs?: number;
}

/**
 * Overflow is its own kind: the request, not the provider, is at fault, and only a smaller one can
 * succeed (RT-10's compact-and-resubmit). Rate limits and transient failures (`isRetryable`: 408,
 * 409, 429, 5xx, a dropped connection) may be retried — but only before any semantic output.
 */
export function classifyError(error: unknown, semantic: boolean, now: () => number): ClassifiedError {
  if (error instanceof ModelCallError) return { error, retryable: false };
  const message = getErrorMessage(error);
  if (!APICallError.isInstance(error)) return { error: new ModelCallError(OVERFLOW.test(message) ? 'overflow' : 'provider', message, semantic), retryable: false };
  const details = `${message} ${error.responseBody ?? ''}`;
  const overflow = error.statusCode === 413 || (OVERFLOW_STATUSES.has(error.statusCode ?? 0) && OVERFLOW.test(details));
  const modelError = new ModelCallError(overflow ? 'overflow' : 'provider', message, semantic);
  const retryable = !semantic && !overflow && error.isRetryable && !NOT_TRANSIENT.test(details);
  const retryAfterMs = retryable ? retryAfter(error.responseHeaders, now) : undefined;
  return retryAfterMs === undefined ? { error: modelError, retryable } : { error: modelError, retryable, retryAfterMs };
}

/** `retry-after-ms` (OpenAI, Azure), else `retry-after` in seconds or as an HTTP date. */
function retryAfter(headers: Record<string, string> | undefined, now: () => number): number | undefined {
  if (!headers) return undefined;
  const lower = Object.fromEntries(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value.trim()]));
  const ms = Number(lower['retry-after-ms'] || Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = lower['retry-after'];
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now());
}
