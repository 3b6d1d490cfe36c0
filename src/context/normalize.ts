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
      messages.push(rendered(message, renderUser));
      provenance.push(source);
    }
    if (message.role !== 'assistant') continue;
    messages.push(rendered(message, renderAssistant));
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
 * The renderers take the message rather than closing over it, so a cache hit allocates nothing.
 */
const renders = new WeakMap<ChatMessage, RequestMessage>();
const rendersWithData = new WeakMap<ChatMessage, RequestMessage>();

function rendered<M extends ChatMessage>(message: M, render: (message: M) => RequestMessage, cache = renders): RequestMessage {
  let request = cache.get(message);
  if (!request) {
    request = Object.freeze(render(message));
    cache.set(message, request);
  }
  return request;
}

function renderUser(message: Extract<ChatMessage, { role: 'user' }>): RequestMessage {
  return { role: 'user', text: message.text };
}

/** Provider data goes out as stored (RT-18): the same object, so its bytes cannot drift. */
function renderAssistant(message: Extract<ChatMessage, { role: 'assistant' }>): RequestMessage {
  const { text, reasoning, toolCalls, providerData } = message;
  return providerData ? { role: 'assistant', text, reasoning, toolCalls, providerData } : { role: 'assistant', text, reasoning, toolCalls };
}

function toolMessage(result: ToolResultMessage, options: { dataBlocks: boolean }): RequestMessage {
  return options.dataBlocks ? rendered(result, renderToolWithData, rendersWithData) : rendered(result, renderTool);
}

function renderTool(result: ToolResultMessage): RequestMessage {
  return { role: 'tool', toolCallId: result.toolCallId, toolName: result.toolName, status: modelVisibleStatus(result.status), content: result.content };
}

/** For a model that takes data blocks: written out, since spreading into a new field is slow in V8. */
function renderToolWithData(result: ToolResultMessage): RequestMessage {
  if (!result.data?.length) return renderTool(result);
  const { toolCallId, toolName, content, data } = result;
  return { role: 'tool', toolCallId, toolName, status: modelVisibleStatus(result.status), content, data };
}

function interrupted(toolCallId: string, toolName: string): RequestMessage {
  return { role: 'tool', toolCallId, toolName, status: 'interrupted', content: INTERRUPTED_RESULT_TEXT };
}

/** The first result of each call id (the sourced items themselves: nothing is allocated per result). */
function firstResultPerCall(items: readonly SourcedMessage[]): Map<string, SourcedResult> {
  const results = new Map<string, SourcedResult>();
  for (const item of items) {
    if (isResult(item) && !results.has(item.message.toolCallId)) results.set(item.message.toolCallId, item);
  }
  return results;
}

type SourcedResult = SourcedMessage & { message: ToolResultMessage };

function isResult(item: SourcedMessage): item is SourcedResult {
  return item.message.role === 'tool';
}
