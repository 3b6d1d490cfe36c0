import {
  APICallError,
  getErrorMessage,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3FunctionTool,
  type LanguageModelV3Message,
  type LanguageModelV3Prompt,
  type LanguageModelV3StreamPart,
  type LanguageModelV3ToolResultPart,
  type SharedV3ProviderOptions,
} from '@ai-sdk/provider';
import type { ToolCallPart } from '../protocol/messages.js';
import { ModelCallError, type ModelCapabilities, type ModelPort, type ModelRequest, type RequestMessage } from '../protocol/model.js';
import { DEFAULT_CAPABILITIES } from './scripted-model.js';

export interface AiSdkModelOptions {
  capabilities?: Partial<ModelCapabilities>;
  /** Passed through to every call, e.g. `{ openai: { reasoningEffort: 'low' } }`. */
  providerOptions?: SharedV3ProviderOptions;
}

/**
 * Adapts an AI SDK `LanguageModelV3` (any provider package) to the runtime's model port.
 * Tool calls are taken only from complete `tool-call` parts, never from `tool-input-*`
 * streaming, so a half-streamed call can never reach a tool (RT-18).
 */
export function aiSdkModel(model: LanguageModelV3, options: AiSdkModelOptions = {}): ModelPort {
  return {
    capabilities: { ...DEFAULT_CAPABILITIES, ...options.capabilities },
    async *stream(request, { signal }) {
      let semantic = false;
      let reader: ReadableStreamDefaultReader<LanguageModelV3StreamPart> | undefined;
      // A pending read must settle on abort, or the generator could never run its cleanup.
      const onAbort = () => void reader?.cancel().catch(() => undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        const { stream } = await model.doStream(callOptions(request, signal, options.providerOptions));
        reader = stream.getReader();
        if (signal.aborted) onAbort();
        let text = '';
        let reasoning = '';
        const toolCalls: ToolCallPart[] = [];
        for (;;) {
          const { done, value: part } = await reader.read();
          if (done) break;
          switch (part.type) {
            case 'text-delta':
              semantic = true;
              text += part.delta;
              yield { type: 'text_delta', text: part.delta };
              break;
            case 'reasoning-delta':
              semantic = true;
              reasoning += part.delta;
              yield { type: 'reasoning_delta', text: part.delta };
              break;
            case 'tool-call':
              // A provider-executed call (e.g. hosted web search) is not ours to run.
              if (part.providerExecuted) break;
              semantic = true;
              toolCalls.push({ id: part.toolCallId, name: part.toolName, argumentsText: part.input });
              break;
            case 'error':
              throw modelError(part.error, semantic);
            case 'finish':
              yield { type: 'response_completed', response: { text, reasoning, toolCalls } };
              return;
          }
        }
        if (signal.aborted) throw new ModelCallError('provider', 'model call aborted', semantic);
        // Ending without `finish` is left to the runtime, which reports it as a protocol error.
      } catch (error) {
        throw error instanceof ModelCallError ? error : modelError(error, semantic);
      } finally {
        signal.removeEventListener('abort', onAbort);
        // Cancelling stops an unfinished provider stream (an early return or an error).
        await reader?.cancel().catch(() => undefined);
        reader?.releaseLock();
      }
    },
  };
}

function callOptions(request: ModelRequest, signal: AbortSignal, providerOptions: SharedV3ProviderOptions | undefined): LanguageModelV3CallOptions {
  const tools = request.tools.map(
    (tool): LanguageModelV3FunctionTool => ({
      type: 'function',
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema as LanguageModelV3FunctionTool['inputSchema'],
    }),
  );
  return {
    prompt: toPrompt(request),
    maxOutputTokens: request.maxOutputTokens,
    // Providers differ on an empty tool list (some reject it), so no tools means none sent.
    ...(tools.length > 0 ? { tools } : {}),
    ...(providerOptions ? { providerOptions } : {}),
    abortSignal: signal,
  };
}

function toPrompt(request: ModelRequest): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = request.system.map((part) => ({ role: 'system', content: part.content }));
  for (const message of request.messages) {
    const last = prompt.at(-1);
    if (message.role === 'tool') {
      // Results of one assistant message travel together, as providers expect.
      if (last?.role === 'tool') last.content.push(toolResult(message));
      else prompt.push({ role: 'tool', content: [toolResult(message)] });
    } else if (message.role === 'user') {
      prompt.push({ role: 'user', content: [{ type: 'text', text: message.text }] });
    } else {
      const assistant = assistantMessage(message);
      if (assistant.content.length > 0) prompt.push(assistant);
    }
  }
  return prompt;
}

function assistantMessage(message: Extract<RequestMessage, { role: 'assistant' }>): LanguageModelV3Message & { role: 'assistant' } {
  const content: (LanguageModelV3Message & { role: 'assistant' })['content'] = [];
  // Reasoning first: the order the model produced it, which some providers require.
  if (message.reasoning) content.push({ type: 'reasoning', text: message.reasoning });
  if (message.text) content.push({ type: 'text', text: message.text });
  for (const call of message.toolCalls) {
    content.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: parseInput(call.argumentsText) });
  }
  return { role: 'assistant', content };
}

/**
 * Prompt tool-call parts carry the parsed input (providers serialize it themselves). Arguments
 * that are not a JSON object were already answered with an InvalidArguments result, so the call
 * is replayed with `{}`, as the AI SDK itself does for invalid calls.
 */
function parseInput(argumentsText: string): unknown {
  try {
    const parsed: unknown = JSON.parse(argumentsText);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

function toolResult(message: Extract<RequestMessage, { role: 'tool' }>): LanguageModelV3ToolResultPart {
  return {
    type: 'tool-result',
    toolCallId: message.toolCallId,
    toolName: message.toolName,
    output:
      message.status === 'success'
        ? { type: 'text', value: message.content }
        : { type: 'error-text', value: `[${message.status}] ${message.content}` },
  };
}

const OVERFLOW = /context[ _]length|maximum context|too many tokens|prompt is too long/i;

/** Overflow is its own kind: the request, not the provider, is at fault, and only a smaller one can succeed. */
function modelError(error: unknown, semantic: boolean): ModelCallError {
  const message = getErrorMessage(error);
  if (APICallError.isInstance(error)) {
    const overflow = (error.statusCode === 400 || error.statusCode === 413) && OVERFLOW.test(`${message} ${error.responseBody ?? ''}`);
    return new ModelCallError(overflow ? 'overflow' : 'provider', message, semantic);
  }
  return new ModelCallError(OVERFLOW.test(message) ? 'overflow' : 'provider', message, semantic);
}
