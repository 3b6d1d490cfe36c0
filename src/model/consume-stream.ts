import { ModelCallError, type ModelPort, type ModelRequest, type ModelResponse } from '../protocol/model.js';
import type { TokenUsage } from '../protocol/usage.js';
import { malformedCompletion } from './completion-schema.js';
import {
  MODEL_TOOL_ARGUMENTS_MAX_CHARS,
  MODEL_TOOL_CALL_ID_MAX_CHARS,
  MODEL_TOOL_CALLS_MAX,
  MODEL_TOOL_NAME_MAX_CHARS,
} from '../protocol/input-limits.js';
import { messageOf } from '../protocol/error-message.js';

/** The call's cancellation: `aborted` is read per event, the `AbortSignal` only by a port that wants one. */
export interface StreamCancellation {
  readonly aborted: boolean;
  readonly signal: AbortSignal;
}

export interface DraftSink {
  text(delta: string): void;
  reasoning(delta: string): void;
  /** The clock the first output is timed by; without one it is not timed. */
  now?: () => number;
}

/** A model call read to its end: the response, and what it cost when the port says. */
export interface CompletedCall {
  response: ModelResponse;
  usage?: TokenUsage;
  responseModel?: string;
  /** When the first text or reasoning arrived (the sink's clock), for time to first token (issue 27). */
  firstOutputAtMs?: number;
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
): Promise<CompletedCall> {
  let completed: CompletedCall | undefined;
  let semantic = false;
  let firstOutputAtMs: number | undefined;
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
      if (event.type === 'response_completed') {
        completed = {
          response: event.response,
          ...(event.usage && { usage: event.usage }),
          ...(event.responseModel && { responseModel: event.responseModel }),
          ...(firstOutputAtMs !== undefined && { firstOutputAtMs }),
        };
      } else {
        firstOutputAtMs ??= sink.now?.();
        semantic = true;
        if (event.type === 'text_delta') sink.text(event.text);
        else sink.reasoning(event.text);
      }
    }
  } catch (error) {
    if (error instanceof ModelCallError) {
      throw semantic && !error.semanticOutputProduced ? new ModelCallError(error.kind, error.message, true) : error;
    }
    throw new ModelCallError('provider', messageOf(error), semantic);
  }
  if (!completed) throw new ModelCallError('protocol', 'the model stream ended without a completed response', semantic);
  const bad = oversizedToolCall(completed.response) ?? malformedCompletion(completed);
  if (bad) throw new ModelCallError('protocol', bad, true);
  return completed;
}

/** What is wrong with the response's tool calls, if a part is beyond what the runtime accepts from a model. */
function oversizedToolCall(response: ModelResponse): string | undefined {
  const calls = response.toolCalls;
  if (calls.length > MODEL_TOOL_CALLS_MAX) return `the response has ${calls.length} tool calls (at most ${MODEL_TOOL_CALLS_MAX})`;
  for (const call of calls) {
    if (call.id.length > MODEL_TOOL_CALL_ID_MAX_CHARS) return `a tool call id is ${call.id.length} characters long (at most ${MODEL_TOOL_CALL_ID_MAX_CHARS})`;
    if (call.name.length > MODEL_TOOL_NAME_MAX_CHARS) return `a tool name is ${call.name.length} characters long (at most ${MODEL_TOOL_NAME_MAX_CHARS})`;
    if (call.argumentsText.length > MODEL_TOOL_ARGUMENTS_MAX_CHARS) {
      return `the arguments of '${call.name}' are ${call.argumentsText.length} characters long (at most ${MODEL_TOOL_ARGUMENTS_MAX_CHARS})`;
    }
  }
  return undefined;
}
