import { INTERRUPTED_RESULT_TEXT, modelVisibleStatus, type ChatMessage, type ToolResultMessage } from '../protocol/messages.js';
import type { RequestMessage } from '../protocol/model.js';

/** A message of the request copy with where it came from: a stored message id, or `synthetic`. */
export interface SourcedMessage {
  message: ChatMessage;
  source: string;
}

export interface NormalizedConversation {
  messages: RequestMessage[];
  /** For each request message: the stored message id it renders, or `synthetic`. */
  provenance: string[];
}

export const SYNTHETIC = 'synthetic';

/**
 * The protocol-repair pass of the request copy (CW-4, RT-25). Each assistant message is followed
 * directly by the results of its calls in call order; results that are misplaced move there,
 * duplicates and orphans are dropped, and a call with no result gets a synthesized `interrupted`
 * result with a fixed text. Data blocks go only to a model that takes them. Works on a copy: chat
 * state and storage are never touched, and the same history always yields the same bytes.
 */
export function normalizeConversation(items: readonly SourcedMessage[], options: { dataBlocks: boolean }): NormalizedConversation {
  const results = firstResultPerCall(items);
  const messages: RequestMessage[] = [];
  const provenance: string[] = [];
  for (const { message, source } of items) {
    if (message.role === 'user') {
      messages.push(rendered(message, () => ({ role: 'user', text: message.text })));
      provenance.push(source);
    }
    if (message.role !== 'assistant') continue;
    messages.push(rendered(message, () => ({ role: 'assistant', text: message.text, reasoning: message.reasoning, toolCalls: message.toolCalls })));
    provenance.push(source);
    for (const call of message.toolCalls) {
      const result = results.get(call.id);
      messages.push(result ? toolMessage(result.message, options) : interrupted(call.id, call.name));
      provenance.push(result ? result.source : SYNTHETIC);
    }
  }
  return { messages, provenance };
}

/**
 * A stored message renders to the same request message every call, so it is built once and shared
 * (frozen, since requests reuse it); a conversation's copy then allocates per call only what changed.
 */
const renders = new WeakMap<ChatMessage, RequestMessage>();
const rendersWithData = new WeakMap<ChatMessage, RequestMessage>();

function rendered(message: ChatMessage, render: () => RequestMessage, cache = renders): RequestMessage {
  let request = cache.get(message);
  if (!request) {
    request = Object.freeze(render());
    cache.set(message, request);
  }
  return request;
}

function toolMessage(result: ToolResultMessage, options: { dataBlocks: boolean }): RequestMessage {
  return rendered(result, () => renderTool(result, options), options.dataBlocks ? rendersWithData : renders);
}

function renderTool(result: ToolResultMessage, options: { dataBlocks: boolean }): RequestMessage {
  const base = { role: 'tool' as const, toolCallId: result.toolCallId, toolName: result.toolName, status: modelVisibleStatus(result.status), content: result.content };
  return options.dataBlocks && result.data?.length ? { ...base, data: result.data } : base;
}

function interrupted(toolCallId: string, toolName: string): RequestMessage {
  return { role: 'tool', toolCallId, toolName, status: 'interrupted', content: INTERRUPTED_RESULT_TEXT };
}

function firstResultPerCall(items: readonly SourcedMessage[]): Map<string, { message: ToolResultMessage; source: string }> {
  const results = new Map<string, { message: ToolResultMessage; source: string }>();
  for (const { message, source } of items) {
    if (message.role === 'tool' && !results.has(message.toolCallId)) results.set(message.toolCallId, { message, source });
  }
  return results;
}
