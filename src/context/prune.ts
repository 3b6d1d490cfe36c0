import type { ChatMessage } from '../protocol/messages.js';

/** CW-4: old tool results longer than this are cut to their head and tail in the request copy. */
export const PRUNE_THRESHOLD_CHARS = 8_192;
const HEAD_CHARS = 4_096;
const TAIL_CHARS = 1_024;

/** The pruned text of a long tool result: head, a marker saying how much went, tail. */
export function pruneText(content: string): string {
  if (content.length <= PRUNE_THRESHOLD_CHARS) return content;
  const dropped = content.length - HEAD_CHARS - TAIL_CHARS;
  return `${content.slice(0, HEAD_CHARS)}\n[… ${dropped} characters of this earlier tool result were pruned …]\n${content.slice(-TAIL_CHARS)}`;
}

/** A tool result below the watermark, pruned; anything else unchanged (the same object, so nothing is copied needlessly). */
export function pruneMessage(message: ChatMessage): ChatMessage {
  if (message.role !== 'tool' || message.content.length <= PRUNE_THRESHOLD_CHARS) return message;
  return { ...message, content: pruneText(message.content) };
}
