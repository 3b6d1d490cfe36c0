import type { ConversationItem } from '../context/conversation.js';
import { markAppendOnly } from '../context/request-copy.js';
import type { ChatMessage, StoredMessage } from '../protocol/messages.js';
import { TurnFailure } from '../protocol/tool-result.js';

/** What the chat state refuses, by name (CW-3). */
export type ChatStateErrorCode = 'PersistedSystemMessage' | 'UnmatchedToolResult' | 'DuplicateToolCallId';

export class ChatStateError extends TurnFailure {
  constructor(
    readonly reason: ChatStateErrorCode,
    message: string,
  ) {
    super('chat_state_error', `${reason}: ${message}`);
    this.name = 'ChatStateError';
  }
}

/**
 * The conversation's single writer (CW-3). It holds the items a model call sees — a compaction's
 * synthetic items first when there is one, then stored messages — and the prune watermark.
 * A tool result must answer an open call, and a call id is used once in the session. `check` runs
 * before the database write so storage and chat state never disagree about an accepted message.
 */
export class ChatState {
  private readonly items: ConversationItem[] = [];
  private readonly messages: ChatMessage[] = [];
  private readonly callIds = new Set<string>();
  private readonly openCalls = new Set<string>();
  private lastSequence = 0;
  /** Tool results of messages below this sequence are pruned in the request copy (CW-4). */
  watermark = 0;

  /**
   * @param history every stored message of the session (for sequences and call ids)
   * @param projection the active compaction's synthetic items, if any
   * @param boundarySequence messages up to this sequence are replaced by the projection
   */
  constructor(history: readonly StoredMessage[] = [], projection: readonly ConversationItem[] = [], boundarySequence = 0) {
    // `push` is the only write to `items`: request assembly may then reuse its copy of them (CW-1).
    markAppendOnly(this.items);
    for (const stored of history) {
      if ((stored.message.role as string) === 'system') {
        throw new ChatStateError('PersistedSystemMessage', `stored message ${stored.id} is a system message`);
      }
      this.lastSequence = Math.max(this.lastSequence, stored.sequence);
      if (stored.message.role === 'assistant') for (const call of stored.message.toolCalls) this.callIds.add(call.id);
    }
    for (const item of projection) this.push(item);
    for (const stored of history) {
      if (stored.sequence > boundarySequence) this.push(realItem(stored));
    }
  }

  get nextSequence(): number {
    return this.lastSequence + 1;
  }

  /** Whether a tool call of the session already has this id (RT-15: the runtime then mints another). */
  usesCallId(id: string): boolean {
    return this.callIds.has(id);
  }

  /** Throws a `chat_state_error` failure when the message would break the conversation. */
  check(message: ChatMessage): void {
    if ((message.role as string) === 'system') throw new ChatStateError('PersistedSystemMessage', 'system messages are not part of a conversation');
    if (message.role === 'tool' && !this.openCalls.has(message.toolCallId)) {
      throw new ChatStateError('UnmatchedToolResult', `no open tool call '${message.toolCallId}'`);
    }
    if (message.role === 'assistant') {
      const ids = new Set<string>();
      for (const call of message.toolCalls) {
        if (this.callIds.has(call.id) || ids.has(call.id)) throw new ChatStateError('DuplicateToolCallId', `'${call.id}' is already used`);
        ids.add(call.id);
      }
    }
  }

  /** Appends a message; `checked` when `check` already passed for it (before its database write). */
  append(stored: StoredMessage, checked = false): void {
    if (!checked) this.check(stored.message);
    if (stored.message.role === 'assistant') for (const call of stored.message.toolCalls) this.callIds.add(call.id);
    this.lastSequence = Math.max(this.lastSequence, stored.sequence);
    this.push(realItem(stored));
  }

  /** What the model may see: committed items only; the draft lives in the live view. */
  view(): readonly ConversationItem[] {
    return this.items;
  }

  /** The view's messages without provenance (kept alongside, so the hot path does not map). */
  conversation(): readonly ChatMessage[] {
    return this.messages;
  }

  private push(item: ConversationItem): void {
    const { message } = item;
    if (message.role === 'assistant') for (const call of message.toolCalls) this.openCalls.add(call.id);
    if (message.role === 'tool') this.openCalls.delete(message.toolCallId);
    this.items.push(item);
    this.messages.push(message);
  }
}

function realItem(stored: StoredMessage): ConversationItem {
  return { message: stored.message, provenance: { kind: 'real', messageId: stored.id, sequence: stored.sequence } };
}
