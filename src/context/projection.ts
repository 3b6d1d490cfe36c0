import type { ToolResultMessage } from '../protocol/messages.js';
import { estimateTokens } from '../protocol/token-estimate.js';

/** CW-4: a single tool result estimated above this is projected down to it. */
export const ITEM_TOKEN_LIMIT = 8_000;
/** The item budget in UTF-8 bytes (a token is four bytes of JSON). */
const BUDGET_BYTES = ITEM_TOKEN_LIMIT * 4;
const HEAD_BYTES = Math.floor(BUDGET_BYTES * 0.75);
const TAIL_BYTES = BUDGET_BYTES - HEAD_BYTES;

/** What the model would see of a result: never its artifact (CW-7). */
function visible(message: ToolResultMessage): Omit<ToolResultMessage, 'artifact'> {
  if (message.artifact === undefined) return message;
  const { artifact: _uiOnly, ...rest } = message;
  return rest;
}

/** Cheap bound before serializing: a JSON char costs at most 6 bytes (`\uXXXX`), the envelope is short. */
function certainlySmall(message: Omit<ToolResultMessage, 'artifact'>): boolean {
  return !message.data && 6 * (message.content.length + message.toolName.length + message.toolCallId.length) + 200 <= BUDGET_BYTES;
}

/**
 * Single-item projection: an oversized tool result loses its data blocks and keeps the first 75 %
 * and the last 25 % of the item budget (in bytes, cut at character boundaries), with a marker where
 * the middle was. The artifact is the UI's business and is never measured.
 */
export function projectToolResult(message: ToolResultMessage): ToolResultMessage {
  const shown = visible(message);
  if (certainlySmall(shown) || estimateTokens(shown) <= ITEM_TOKEN_LIMIT) return message;
  const { data: _dropped, ...rest } = message;
  const bytes = Buffer.from(message.content, 'utf8');
  if (bytes.length <= BUDGET_BYTES) return rest;
  const head = bytes.subarray(0, charStart(bytes, HEAD_BYTES, -1)).toString('utf8');
  const tail = bytes.subarray(charStart(bytes, bytes.length - TAIL_BYTES, 1)).toString('utf8');
  const cut = message.content.length - head.length - tail.length;
  return { ...rest, content: `${head}\n[… ${cut} characters truncated to fit the context window …]\n${tail}` };
}

/** The nearest index from `at` (moving by `step`) that starts a UTF-8 character, so no cut splits one. */
function charStart(bytes: Buffer, at: number, step: 1 | -1): number {
  let i = at;
  while (i > 0 && i < bytes.length && ((bytes[i] ?? 0) & 0xc0) === 0x80) i += step;
  return i;
}
