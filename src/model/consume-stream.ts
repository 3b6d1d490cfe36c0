import { ModelCallError, type ModelPort, type ModelRequest, type ModelResponse } from '../protocol/model.js';

/** The call's cancellation: `aborted` is read per event, the `AbortSignal` only by a port that wants one. */
export interface StreamCancellation {
  readonly aborted: boolean;
  readonly signal: AbortSignal;
}

export interface DraftSink {
  text(delta: string): void;
  reasoning(delta: string): void;
}

/**
 * Reads one model stream to its completed response (RT-18): deltas go to the draft sink,
 * tool calls come only from the completed response, a missing or second completion is a
 * protocol error, and every error after the first semantic event says so.
 *
 * A cancel does not wait for this function: the turn leaves `calling` at once and the chart
 * ignores whatever this call settles with. Reading simply stops at the next event.
 */
export async function consumeModelStream(
  port: ModelPort,
  request: ModelRequest,
  cancellation: StreamCancellation,
  sink: DraftSink,
): Promise<ModelResponse> {
  let completed: ModelResponse | undefined;
  let semantic = false;
  // A getter, so the signal is made only if the port reads it.
  const options = {
    get signal() {
      return cancellation.signal;
    },
  };
  try {
    for await (const event of port.stream(request, options)) {
      if (cancellation.aborted) throw new ModelCallError('provider', 'model call aborted', semantic);
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
