import { setTimeout as delay } from 'node:timers/promises';
import type { LanguageModelV3, SharedV3ProviderOptions } from '@ai-sdk/provider';
import { z } from 'zod';
import { TurnchartError } from '../protocol/errors.js';
import { ModelCallError, type ModelCapabilities, type ModelPort } from '../protocol/model.js';
import { AttemptFailure, streamAttempt } from './ai-sdk-attempt.js';
import { callOptions } from './ai-sdk-prompt.js';
import { decideRetry, type RetryPolicy } from './retry-policy.js';
import { DEFAULT_CAPABILITIES } from './scripted-model.js';

export interface AiSdkModelOptions {
  capabilities?: Partial<ModelCapabilities>;
  /** Passed through to every call, e.g. `{ openai: { reasoningEffort: 'low' } }`. */
  providerOptions?: SharedV3ProviderOptions;
  /** Retries of a rate limit or transient failure that came before any output (default 2). */
  maxRetries?: number;
  /** The first backoff when the provider names no wait; doubled each retry, jittered (default 1 000 ms). */
  retryBaseDelayMs?: number;
  /** The longest backoff (default 30 000 ms). */
  retryMaxDelayMs?: number;
  /** A provider's `retry-after` longer than this fails the call instead of waiting (default 60 000 ms). */
  maxRetryAfterMs?: number;
  /** No stream part (or no response) for this long ends the call as `model_error` (default 180 000 ms; 0: never). */
  stallTimeoutMs?: number;
  /** The wait between attempts; must reject when `signal` aborts. For tests: no real waiting. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The clock an HTTP-date `retry-after` is read against. */
  now?: () => number;
  /** In [0, 1): the backoff jitter's source. */
  random?: () => number;
}

const delayMs = z.number().int().min(0).max(3_600_000);

const optionsSchema = z.object({
  maxRetries: z.number().int().min(0).max(20).default(2),
  retryBaseDelayMs: delayMs.default(1_000),
  retryMaxDelayMs: delayMs.default(30_000),
  maxRetryAfterMs: delayMs.default(60_000),
  stallTimeoutMs: delayMs.default(180_000),
});

const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal });

/**
 * Adapts an AI SDK `LanguageModelV3` (any provider package) to the runtime's model port: text,
 * reasoning and tool calls stream through, usage and finish reason come with the completed
 * response, provider metadata is kept to be sent back (RT-18), a context overflow is its own error
 * kind (RT-10), and rate limits and transient failures are retried — only before any output.
 */
export function aiSdkModel(model: LanguageModelV3, options: AiSdkModelOptions = {}): ModelPort {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw new TurnchartError('InvalidOptions', `aiSdkModel: ${z.prettifyError(parsed.error)}`);
  const settings = parsed.data;
  const sleep = options.sleep ?? defaultSleep;
  const attempt = { stallTimeoutMs: settings.stallTimeoutMs, now: options.now ?? Date.now };
  const policy: RetryPolicy = {
    maxRetries: settings.maxRetries,
    baseDelayMs: settings.retryBaseDelayMs,
    maxDelayMs: settings.retryMaxDelayMs,
    maxRetryAfterMs: settings.maxRetryAfterMs,
    random: options.random ?? Math.random,
  };
  return {
    capabilities: { ...DEFAULT_CAPABILITIES, ...options.capabilities },
    identity: { provider: model.provider, model: model.modelId },
    async *stream(request, { signal }) {
      const call = callOptions(request, options.providerOptions);
      for (let retries = 0; ; retries += 1) {
        try {
          yield* streamAttempt(model, call, signal, attempt);
          return;
        } catch (error) {
          if (!(error instanceof AttemptFailure)) throw error;
          const decision = decideRetry(error.failure, retries, policy);
          if (!decision.retry) throw decision.error;
          await wait(sleep, decision.delayMs, signal);
        }
      }
    },
  };
}

/** A cancel ends the wait at once, as the model call it stands for. */
async function wait(sleep: NonNullable<AiSdkModelOptions['sleep']>, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw new ModelCallError('provider', 'model call aborted');
  try {
    await sleep(ms, signal);
  } catch (error) {
    if (signal.aborted) throw new ModelCallError('provider', 'model call aborted');
    throw error;
  }
  if (signal.aborted) throw new ModelCallError('provider', 'model call aborted');
}
