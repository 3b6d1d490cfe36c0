import type { ChatMessage, StoredMessage } from '../protocol/messages.js';
import { TurnFailure } from '../protocol/tool-result.js';

/**
 * The conversation's single writer (CW-3). A tool result must answer an open call of this
 * session, and a call id is used once. `check` runs before the database write so storage and
 * chat state never disagree about an accepted message.
 */
export class ChatState {
  private readonly messages: StoredMessage[] = [];
  private readonly conversation: ChatMessage[] = [];
  private readonly callIds = new Set<string>();
  private readonly openCalls = new Set<string>();

  constructor(history: readonly StoredMessage[] = []) {
    for (const message of history) this.track(message.message);
    this.messages.push(...history);
    this.conversation.push(...history.map((m) => m.message));
  }

  get nextSequence(): number {
    return (this.messages.at(-1)?.sequence ?? 0) + 1;
  }

  /** Throws a `chat_state_error` failure when the message would break the conversation. */
  check(message: ChatMessage): void {
    if (message.role === 'tool' && !this.openCalls.has(message.toolCallId)) {
      throw new TurnFailure('chat_state_error', `UnmatchedToolResult: no open tool call '${message.toolCallId}'`);
    }
    if (message.role === 'assistant') {
      const ids = new Set<string>();
      for (const call of message.toolCalls) {
        if (this.callIds.has(call.id) || ids.has(call.id)) {
          throw new TurnFailure('chat_state_error', `DuplicateToolCallId: '${call.id}' is already used`);
        }
        ids.add(call.id);
      }
    }
  }

  append(message: StoredMessage): void {
    this.check(message.message);
    this.track(message.message);
    this.messages.push(message);
    this.conversation.push(message.message);
  }

  /** What the model may see: committed messages only; the draft lives elsewhere. */
  view(): readonly ChatMessage[] {
    return this.conversation;
  }

  stored(): readonly StoredMessage[] {
    return this.messages;
  }

  private track(message: ChatMessage): void {
    if (message.role === 'assistant') {
      for (const call of message.toolCalls) {
        this.callIds.add(call.id);
        this.openCalls.add(call.id);
      }
    }
    if (message.role === 'tool') this.openCalls.delete(message.toolCallId);
  }
}
