import { z } from 'zod';
import { idSchema } from '../protocol/commands.js';

/**
 * The approval ids the AI SDK endpoint hands out: the turn and the tool call a `tool-approval-request`
 * stands for, so the client's answer names exactly the pending permission it resolves, with nothing
 * kept on the host between the two requests.
 */
const PREFIX = 'apr_';
const pair = z.tuple([idSchema, idSchema]);

export function approvalId(turnId: string, toolCallId: string): string {
  return PREFIX + Buffer.from(JSON.stringify([turnId, toolCallId]), 'utf8').toString('base64url');
}

/** The turn and tool call of an approval id; null for anything this host did not hand out. */
export function parseApprovalId(id: string): { turnId: string; toolCallId: string } | null {
  if (!id.startsWith(PREFIX) || id.length > 2_000) return null;
  try {
    const parsed = pair.safeParse(JSON.parse(Buffer.from(id.slice(PREFIX.length), 'base64url').toString('utf8')));
    return parsed.success ? { turnId: parsed.data[0], toolCallId: parsed.data[1] } : null;
  } catch {
    return null;
  }
}
