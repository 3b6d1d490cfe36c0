import { estimateTokens } from '../protocol/commands.js';
import type { ToolResultMessage } from '../protocol/messages.js';

/** CW-4: a single tool result estimated above this is projected down to it. */
export const ITEM_TOKEN_LIMIT = 8_000;
const BUDGET_CHARS = ITEM_TOKEN_LIMIT * 4;
const HEAD_CHARS = Math.floor(BUDGET_CHARS * 0.75);
const TAIL_CHARS = BUDGET_CHARS - HEAD_CHARS;

/** Cheap bound before serializing: a JSON char costs at most 6 bytes (`\uXXXX`), the envelope is short. */
function certainlySmall(message: ToolResultMessage): boolean {
  return !message.data && message.artifact === undefined && 6 * (message.content.length + message.toolName.length + message.toolCallId.length) + 200 <= BUDGET_CHARS;
}

/**
 * Single-item projection: an oversized tool result loses its data blocks and keeps the first 75 %
 * and the last 25 % of the item budget, with a marker where the middle was.
 */
export function projectToolResult(message: ToolResultMessage): ToolResultMessage {
  if (certainlySmall(message) || estimateTokens(message) <= ITEM_TOKEN_LIMIT) return message;
  const { data: _dropped, ...rest } = message;
  const { content } = message;
  if (content.length <= BUDGET_CHARS) return rest;
  const cut = content.length - HEAD_CHARS - TAIL_CHARS;
  return { ...rest, content: `${content.slice(0, HEAD_CHARS)}\n[… ${cut} characters truncated to fit the context window …]\n${content.slice(-TAIL_CHARS)}` };
}
