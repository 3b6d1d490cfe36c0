import { sanitize, type SanitizeLimits } from '../inspect/sanitize.js';
import type { ToolCallPart } from '../protocol/messages.js';
import type { ModelRequest, ModelResponse, RequestMessage } from '../protocol/model.js';
import type { ToolResult } from '../protocol/tool-result.js';

/**
 * Issue 27: span content in the shapes the OpenTelemetry GenAI conventions give it
 * (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions`: their JSON
 * schemas; `gen_ai.tool.call.arguments` / `.result`), recorded as JSON strings — the conventions
 * allow a string where an attribute cannot hold structure, and OpenTelemetry's JavaScript attributes
 * cannot. Every value goes through the inspector's sanitizer first: credentials redacted (by key, and
 * inside text: `password=…`, `Authorization: Bearer …`, a URL's password), strings, items and depth
 * capped, the whole under a byte budget. What leaves the host in a span is what the inspector shows.
 */

/** How much of a span's content is kept: each string, the number of messages, the approximate JSON bytes of one attribute. */
export interface ContentLimits {
  maxString: number;
  maxMessages: number;
  maxBytes: number;
}

export const DEFAULT_CONTENT_LIMITS: ContentLimits = { maxString: 4_000, maxMessages: 50, maxBytes: 32_768 };

type Part =
  | { type: 'text'; content: string }
  | { type: 'reasoning'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; result: unknown };

interface Message {
  role: 'user' | 'assistant' | 'tool';
  parts: Part[];
}

/** The request's conversation (its last `maxMessages`: the newest are what the call answered). */
export function inputMessages(request: ModelRequest, limits: ContentLimits): string {
  const messages = request.messages.slice(-limits.maxMessages).map(messageOf);
  return bounded(messages, limits, limits.maxMessages + 1);
}

/** The system context, sent apart from the conversation. */
export function systemInstructions(request: ModelRequest, limits: ContentLimits): string {
  return bounded(request.system.map((part) => ({ type: 'text', content: part.content })), limits, limits.maxMessages);
}

/** The model's one answer (turnchart asks for one choice), with why it stopped. */
export function outputMessages(response: ModelResponse, limits: ContentLimits): string {
  const message = messageOf({ role: 'assistant', text: response.text, reasoning: response.reasoning, toolCalls: response.toolCalls });
  return bounded([{ ...message, finish_reason: finishReasonOf(response) }], limits, limits.maxMessages);
}

/**
 * The output schema's words (`stop`, `length`, `content_filter`, `tool_call`, `error`) for the
 * provider's reason; a provider that gave none stopped for its tool calls, or at the end of its answer.
 */
function finishReasonOf(response: ModelResponse): string {
  const reason = response.finishReason ?? (response.toolCalls.length > 0 ? 'tool_calls' : 'stop');
  return reason === 'tool_calls' ? 'tool_call' : reason;
}

export function toolArguments(call: ToolCallPart, limits: ContentLimits): string {
  return bounded(argumentsOf(call), limits, limits.maxMessages);
}

export function toolResult(result: ToolResult, limits: ContentLimits): string {
  return bounded(result.content, limits, limits.maxMessages);
}

function messageOf(message: RequestMessage): Message {
  switch (message.role) {
    case 'user':
      return { role: 'user', parts: [{ type: 'text', content: message.text }] };
    case 'assistant': {
      const parts: Part[] = [];
      if (message.reasoning !== '') parts.push({ type: 'reasoning', content: message.reasoning });
      if (message.text !== '') parts.push({ type: 'text', content: message.text });
      for (const call of message.toolCalls) parts.push({ type: 'tool_call', id: call.id, name: call.name, arguments: argumentsOf(call) });
      return { role: 'assistant', parts };
    }
    case 'tool':
      return { role: 'tool', parts: [{ type: 'tool_call_response', id: message.toolCallId, result: message.content }] };
  }
}

/** A call's arguments as the object the model wrote, or its text when that is not JSON. */
function argumentsOf(call: ToolCallPart): unknown {
  try {
    return JSON.parse(call.argumentsText) as unknown;
  } catch {
    return call.argumentsText;
  }
}

/** Sanitized and bounded, as JSON text (a string stays a string, its credentials redacted). */
function bounded(value: unknown, limits: ContentLimits, maxItems: number): string {
  const sanitizeLimits: SanitizeLimits = { maxString: limits.maxString, maxItems, maxDepth: 8, maxBytes: limits.maxBytes };
  const kept = sanitize(value, sanitizeLimits);
  return typeof kept === 'string' ? kept : JSON.stringify(kept);
}
