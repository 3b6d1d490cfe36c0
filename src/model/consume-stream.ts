import { ModelCallError, type ModelPort, type ModelRequest, type ModelResponse } from '../protocol/model.js';

export interface DraftSink {
  text(delta: string): void;
  reasoning(delta: string): void;
}

/**
 * Reads one model stream to its completed response (RT-18): deltas go to the draft sink,
 * tool calls come only from the completed response, a missing or second completion is a
 * protocol error, and every error after the first semantic event says so.
 */
export async function consumeModelStream(
  port: ModelPort,
  request: ModelRequest,
  signal: AbortSignal,
  sink: DraftSink,
): Promise<ModelResponse> {
  let completed: ModelResponse | undefined;
  let semantic = false;
  try {
    for await (const event of abortable(port.stream(request, { signal }), signal)) {
      if (completed) throw new ModelCallError('protocol', 'the model completed a response twice', true);
      if (event.type === 'response_completed') completed = event.response;
      else {
        semantic = true;
        if (event.type === 'text_delta') sink.text(event.text);
        else sink.reasoning(event.text);
      }
    }
  } catch (error) {
    if (error instanceof ModelCallError) {
      throw semantic && !error.semanticOutputProduced ? new ModelCallError(error.kind, error.message, true) : error;
    }
    throw new ModelCallError('provider', error instanceof Error ? error.message : String(error), semantic);
  }
  if (!completed) throw new ModelCallError('protocol', 'the model stream ended without a completed response', semantic);
  return completed;
}

/** Stops waiting on a provider that ignores its signal: an abort ends the read at once. */
async function* abortable<T>(source: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new ModelCallError('provider', 'model call aborted'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
    if (signal.aborted) void iterator.return?.()?.catch?.(() => undefined);
  }
}
