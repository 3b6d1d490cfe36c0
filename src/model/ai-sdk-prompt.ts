import type {
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultPart,
  SharedV3ProviderOptions,
} from '@ai-sdk/provider';
import type { ToolCallPart } from '../protocol/messages.js';
import type { ModelRequest, RequestMessage } from '../protocol/model.js';

type AssistantPrompt = LanguageModelV3Message & { role: 'assistant' };
type AssistantContent = AssistantPrompt['content'];
type RequestAssistant = Extract<RequestMessage, { role: 'assistant' }>;
type RequestToolResult = Extract<RequestMessage, { role: 'tool' }>;

/** The call options of one model call, without its abort signal (each attempt brings its own). */
export function callOptions(request: ModelRequest, providerOptions: SharedV3ProviderOptions | undefined): Omit<LanguageModelV3CallOptions, 'abortSignal'> {
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
  };
}

/**
 * The request as an AI SDK prompt. Tool calls and results travel under the provider's ids (RT-15):
 * the request pairs them by the runtime's, and each result follows its call's assistant message
 * (normalize sees to that), so the mapping is learnt on the way.
 */
function toPrompt(request: ModelRequest): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = request.system.map((part) => ({ role: 'system', content: part.content }));
  const providerIds = new Map<string, string>();
  for (const message of request.messages) {
    const last = prompt.at(-1);
    if (message.role === 'tool') {
      const result = toolResult(message, providerIds.get(message.toolCallId) ?? message.toolCallId);
      // Results of one assistant message travel together, as providers expect.
      if (last?.role === 'tool') last.content.push(result);
      else prompt.push({ role: 'tool', content: [result] });
    } else if (message.role === 'user') {
      prompt.push({ role: 'user', content: [{ type: 'text', text: message.text }] });
    } else {
      for (const call of message.toolCalls) if (call.providerId !== undefined) providerIds.set(call.id, call.providerId);
      const assistant = assistantMessage(message);
      if (assistant.content.length > 0) prompt.push(assistant);
    }
  }
  return prompt;
}

function assistantMessage(message: RequestAssistant): AssistantPrompt {
  return { role: 'assistant', content: message.providerData ? fromBlocks(message) : flatContent(message) };
}

/** Without provider data: reasoning first, the order the model produced it, which some providers require. */
function flatContent(message: RequestAssistant): AssistantContent {
  const content: AssistantContent = [];
  if (message.reasoning) content.push({ type: 'reasoning', text: message.reasoning });
  if (message.text) content.push({ type: 'text', text: message.text });
  for (const call of message.toolCalls) content.push(toolCallPart(call));
  return content;
}

/**
 * With provider data (RT-18): the blocks in the order received, each with its metadata as the
 * provider's options, exactly as stored. A call no block places (there should be none) goes last.
 */
function fromBlocks(message: RequestAssistant): AssistantContent {
  const content: AssistantContent = [];
  const placed = new Set<number>();
  for (const block of message.providerData!.blocks) {
    if (block.type === 'tool_call') {
      const call = message.toolCalls[block.index];
      if (call && !placed.has(block.index)) content.push(toolCallPart(call));
      placed.add(block.index);
    } else {
      content.push({ type: block.type, text: block.text, ...(block.providerMetadata && { providerOptions: block.providerMetadata }) });
    }
  }
  message.toolCalls.forEach((call, index) => placed.has(index) || content.push(toolCallPart(call)));
  return content;
}

function toolCallPart(call: ToolCallPart): AssistantContent[number] {
  return {
    type: 'tool-call',
    toolCallId: call.providerId ?? call.id,
    toolName: call.name,
    input: parseInput(call.argumentsText),
    ...(call.providerMetadata && { providerOptions: call.providerMetadata }),
  };
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

function toolResult(message: RequestToolResult, toolCallId: string): LanguageModelV3ToolResultPart {
  return {
    type: 'tool-result',
    toolCallId,
    toolName: message.toolName,
    output:
      message.status === 'success'
        ? { type: 'text', value: message.content }
        : { type: 'error-text', value: `[${message.status}] ${message.content}` },
  };
}
