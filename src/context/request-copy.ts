import { ContextAssemblyError } from './assembly-error.js';
import type { ConversationItem } from './conversation.js';
import { NormalizedCopy, SYNTHETIC, type SourcedMessage } from './normalize.js';
import { projectToolResult } from './projection.js';
import { pruneMessage } from './prune.js';

/** What shapes the copy besides the items: a different watermark or model means another copy. */
export interface CopyOptions {
  watermark: number;
  dataBlocks: boolean;
}

/**
 * The normalized request copy of a conversation, kept per conversation array and extended by the
 * items appended since the last call: the runtime prepares every model step from the chat state's
 * one append-only array, and rebuilding the copy each step made a step cost the whole history
 * again (and, past the CPU caches, more than linearly). The kept copy is reused only if every item
 * it was built from is still in place; otherwise, or under other options, it is built afresh.
 * The result is owned by the cache: callers copy what they hand out.
 */
export function requestCopy(conversation: readonly ConversationItem[], options: CopyOptions): NormalizedCopy {
  let kept = copies.get(conversation);
  if (!kept || !reusable(kept, conversation, options)) {
    kept = { items: [], options, copy: new NormalizedCopy({ dataBlocks: options.dataBlocks }) };
    copies.set(conversation, kept);
  }
  try {
    for (let i = kept.items.length; i < conversation.length; i++) {
      const item = conversation[i]!;
      kept.copy.append(copyOf(item, options.watermark));
      kept.items.push(item);
    }
  } catch (error) {
    // A refused item stops the build part way: the next call starts over rather than trust a half-extended copy.
    copies.delete(conversation);
    throw error;
  }
  return kept.copy;
}

interface KeptCopy {
  /** The items the copy was built from, in order. */
  items: ConversationItem[];
  options: CopyOptions;
  copy: NormalizedCopy;
}

const copies = new WeakMap<readonly ConversationItem[], KeptCopy>();

/**
 * The same options, and the conversation starts with exactly the items already copied (compared by
 * identity). An array its owner only appends to is checked at the last copied item only: comparing
 * every item is the one part of a step that still grows with the whole history.
 */
function reusable(kept: KeptCopy, conversation: readonly ConversationItem[], options: CopyOptions): boolean {
  if (kept.options.watermark !== options.watermark || kept.options.dataBlocks !== options.dataBlocks) return false;
  const { items } = kept;
  if (conversation.length < items.length) return false;
  if (appendOnly.has(conversation)) return items.length === 0 || conversation[items.length - 1] === items[items.length - 1];
  for (let i = 0; i < items.length; i++) if (conversation[i] !== items[i]) return false;
  return true;
}

const appendOnly = new WeakSet<readonly ConversationItem[]>();

/**
 * Declares that this array's owner only ever appends to it (the chat state's conversation, which it
 * never hands out for writing): its kept copy is then reused after checking its end only.
 */
export function markAppendOnly(conversation: readonly ConversationItem[]): void {
  appendOnly.add(conversation);
}

/**
 * One item's copy, pruned (CW-4: a real message below the watermark) or not, then projected. Each
 * depends only on the item, so it is built once and reused: building it per call made a new
 * pruned object every time, which missed the render and size caches (they key on the message) and
 * re-serialized every long tool result.
 */
function copyOf(item: ConversationItem, watermark: number): SourcedMessage {
  const { message, provenance } = item;
  if ((message.role as string) === 'system') throw new ContextAssemblyError('SystemMessageInConversation', 'a system message is in the conversation');
  const prune = provenance.kind === 'real' && provenance.sequence < watermark;
  const cache = prune ? prunedCopies : wholeCopies;
  let copy = cache.get(item);
  if (!copy) {
    const pruned = prune ? pruneMessage(message) : message;
    copy = { message: pruned.role === 'tool' ? projectToolResult(pruned) : pruned, source: provenance.kind === 'real' ? provenance.messageId : SYNTHETIC };
    cache.set(item, copy);
  }
  return copy;
}

const wholeCopies = new WeakMap<ConversationItem, SourcedMessage>();
const prunedCopies = new WeakMap<ConversationItem, SourcedMessage>();
