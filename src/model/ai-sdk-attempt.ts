import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { ModelCallError, type ModelStreamEvent } from '../protocol/model.js';
import { ResponseAssembler } from './ai-sdk-response.js';
import { classifyError, type ClassifiedError } from './provider-errors.js';
import { SilentProviderTimer } from './silent-provider-timer.js';

/** Thrown by an attempt: the port decides whether to retry it. */
export class AttemptFailure extends Error {
  constructor(readonly failure: ClassifiedError) {
    super(failure.error.message);
    this.name = 'AttemptFailure';
  }
}

export interface AttemptSettings {
  stallTimeoutMs: number;
  now: () => number;
}

/**
 * One `doStream` call read to its `finish` part. It owns an abort controller, so a cancel (the
 * caller's signal) or a silent provider (its timer) stops the provider's request itself, not only the read.
 */
export async function* streamAttempt(
  model: LanguageModelV3,
  call: Omit<LanguageModelV3CallOptions, 'abortSignal'>,
  signal: AbortSignal,
  settings: AttemptSettings,
): AsyncGenerator<ModelStreamEvent> {
  const controller = new AbortController();
  let reader: ReadableStreamDefaultReader<LanguageModelV3StreamPart> | undefined;
  // A pending read must settle on abort, or the generator could never run its cleanup.
  const stop = () => {
    controller.abort();
    void reader?.cancel().catch(() => undefined);
  };
  const silence = new SilentProviderTimer(settings.stallTimeoutMs, stop);
  const response = new ResponseAssembler();
  signal.addEventListener('abort', stop, { once: true });
  try {
    if (signal.aborted) stop();
    silence.arm();
    const { stream } = await model.doStream({ ...call, abortSignal: controller.signal });
    silence.disarm();
    reader = stream.getReader();
    if (controller.signal.aborted) stop();
    for (;;) {
      silence.arm();
      const { done, value: part } = await reader.read();
      silence.disarm();
      // Ending without `finish` is left to the runtime, which reports it as a protocol error.
      if (done) break;
      const event = response.accept(part);
      if (event) yield event;
      if (event?.type === 'response_completed') return;
    }
    const cut = interruption(silence, signal, response.semantic);
    if (cut) throw new AttemptFailure({ error: cut, retryable: false });
  } catch (error) {
    silence.disarm();
    if (error instanceof AttemptFailure) throw error;
    const cut = interruption(silence, signal, response.semantic);
    throw new AttemptFailure(cut ? { error: cut, retryable: false } : classifyError(error, response.semantic, settings.now));
  } finally {
    silence.disarm();
    signal.removeEventListener('abort', stop);
    // Cancelling stops an unfinished provider stream (an early return or an error).
    await reader?.cancel().catch(() => undefined);
    reader?.releaseLock();
  }
}

/** A cancel or a stall, which end an attempt whatever error the provider's request then reports. */
function interruption(silence: SilentProviderTimer, signal: AbortSignal, semantic: boolean): ModelCallError | undefined {
  if (signal.aborted) return new ModelCallError('provider', 'model call aborted', semantic);
  if (silence.stalled) return new ModelCallError('provider', `the model stream stalled: nothing arrived for ${silence.timeoutMs} ms`, semantic);
  return undefined;
}
