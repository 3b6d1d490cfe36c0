import { INTERRUPTED_RESULT_TEXT, modelVisibleStatus, type AssistantMessage, type ChatMessage, type ToolCallPart, type ToolResultMessage } from '../protocol/messages.js';
import type { RequestMessage } from '../protocol/model.js';
import { messageBytes } from './budget.js';

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
  const copy = new NormalizedCopy(options);
  for (const item of items) copy.append(item);
  const { messages, provenance } = copy.settle();
  return { messages: [...messages], provenance: [...provenance] };
}

/**
 * `normalizeConversation` built item by item, so a conversation that only grew since the last model
 * call is extended rather than rebuilt (the whole rebuild made every step cost the whole history).
 * An assistant message takes its result slots at once; a slot is filled in place when the call's
 * first result comes, and one still empty when the copy is read gets the `interrupted` stand-in
 * (overwritten too if the result comes later). What is built never moves, so appending in any
 * batches gives what normalizing at once gives.
 */
export class NormalizedCopy {
  /** Request messages; `undefined` is a call slot whose result has not appeared yet. */
  private readonly slots: (RequestMessage | undefined)[] = [];
  private readonly provenance: string[] = [];
  /** UTF-8 bytes of the filled slots' JSON, summed: the conversation's token estimate comes from it. */
  private bytes = 0;
  /** The first result of each call id seen so far (the sourced items themselves). */
  private readonly results = new Map<string, SourcedResult>();
  /** Slots waiting for a result, by call id. */
  private readonly waiting = new Map<string, number[]>();
  /** Empty slots not yet given a stand-in: most are filled by their result first, so none is made. */
  private unsettled: { slot: number; call: ToolCallPart }[] = [];

  constructor(private readonly options: { dataBlocks: boolean }) {}

  append(item: SourcedMessage): void {
    const { message, source } = item;
    if (message.role === 'user') this.push(rendered(message, renderUser), source);
    else if (message.role === 'assistant') this.appendAssistant(message, source);
    else if (isResult(item)) this.appendResult(item);
  }

  /**
   * The copy as it stands (owned by this object: callers copy what they hand out). Each call still
   * without a result shows the `interrupted` stand-in.
   */
  settle(): { messages: readonly RequestMessage[]; provenance: readonly string[]; bytes: number } {
    for (const { slot, call } of this.unsettled) {
      if (this.slots[slot] === undefined) this.write(slot, interrupted(call.id, call.name), SYNTHETIC);
    }
    this.unsettled = [];
    // Every slot is filled now: a result, or the stand-in.
    return { messages: this.slots as RequestMessage[], provenance: this.provenance, bytes: this.bytes };
  }

  private appendAssistant(message: AssistantMessage, source: string): void {
    this.push(rendered(message, renderAssistant), source);
    for (const call of message.toolCalls) {
      const result = this.results.get(call.id);
      if (result) {
        this.push(toolMessage(result.message, this.options), result.source);
        continue;
      }
      const slot = this.slots.length;
      const slots = this.waiting.get(call.id);
      if (slots) slots.push(slot);
      else this.waiting.set(call.id, [slot]);
      this.unsettled.push({ slot, call });
      this.slots.push(undefined);
      this.provenance.push(SYNTHETIC);
    }
  }

  /** A result goes nowhere by itself: it fills the slots of its call, now or when the call appears. */
  private appendResult(item: SourcedResult): void {
    const id = item.message.toolCallId;
    if (this.results.has(id)) return;
    this.results.set(id, item);
    const slots = this.waiting.get(id);
    if (!slots) return;
    this.waiting.delete(id);
    const message = toolMessage(item.message, this.options);
    for (const slot of slots) this.write(slot, message, item.source);
  }

  private push(message: RequestMessage, source: string): void {
    this.slots.push(message);
    this.provenance.push(source);
    this.bytes += messageBytes(message);
  }

  private write(slot: number, message: RequestMessage, source: string): void {
    const previous = this.slots[slot];
    this.bytes += messageBytes(message) - (previous ? messageBytes(previous) : 0);
    this.slots[slot] = message;
    this.provenance[slot] = source;
  }
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

/** Frozen like the rendered messages: a copy kept across calls shares it with every request. */
function interrupted(toolCallId: string, toolName: string): RequestMessage {
  return Object.freeze({ role: 'tool', toolCallId, toolName, status: 'interrupted', content: INTERRUPTED_RESULT_TEXT });
}

type SourcedResult = SourcedMessage & { message: ToolResultMessage };

function isResult(item: SourcedMessage): item is SourcedResult {
  return item.message.role === 'tool';
}
