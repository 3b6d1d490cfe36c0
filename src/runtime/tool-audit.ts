import crypto from 'node:crypto';
import type { WriteResultInput } from '../../machines/tool-call.effects.js';
import { parseArguments, stableStringify } from '../../machines/signature.js';
import type { ToolAttempt, ToolAudit } from '../protocol/audit.js';
import type { ToolCallPart } from '../protocol/messages.js';

/** sha256 in hex: Node's one-shot `hash` where it has one (20.12 and later), about twice as fast for short text. */
const sha256: (text: string) => string =
  typeof crypto.hash === 'function' ? (text) => crypto.hash('sha256', text, 'hex') : (text) => crypto.createHash('sha256').update(text).digest('hex');

/** sha256 (hex) of canonical JSON: keys sorted at every level, so equal arguments hash equally however they were spelled. */
export function argumentsHash(args: unknown): string {
  return sha256(stableStringify(args));
}

/** The arguments as the model sent them: canonical JSON when they parse to an object, else the raw text itself. */
function sentArgumentsHash(call: ToolCallPart): string {
  const parsed = parseArguments(call.argumentsText);
  return parsed === undefined ? sha256(call.argumentsText) : argumentsHash(parsed);
}

/**
 * The audit row of a call whose chart wrote its result (RL-4). A call nobody had to decide about
 * and whose tool ran was allowed by the session's mode; a control tool needs no decision; a call
 * refused before any decision (unknown tool, invalid arguments, doom loop, a cancel) has none.
 * It names the principal that answered the approval when the user decided, else `owner`: the
 * session's, for whom the dispatch acted (issue 25).
 */
export function toolCallAudit(
  input: WriteResultInput,
  times: { permissionWaitMs: number | null; executionMs: number | null; attempts?: ToolAttempt[] },
  controlTool: boolean,
  owner: string | null,
): ToolAudit {
  const decision = input.decision ?? (times.executionMs !== null ? { verdict: 'allowed' as const, by: 'mode' as const } : null);
  return {
    toolCallId: input.call.id,
    toolName: input.call.name,
    argumentsHash: sentArgumentsHash(input.call),
    dispatchedArgumentsHash: input.rewritten ? argumentsHash(input.args) : null,
    verdict: decision?.verdict ?? (controlTool ? 'allowed' : 'none'),
    decidedBy: decision?.by ?? null,
    status: input.result.status,
    // Issue 30: a timeout that ended the turn by its retry policy says so, as a hook's failure does.
    errorCode: input.hookError ?? (input.termination?.kind === 'failed' && input.termination.code === 'tool_timeout' ? 'tool_timeout' : null),
    permissionWaitMs: times.permissionWaitMs,
    executionMs: times.executionMs,
    principal: (decision?.by === 'user' ? decision.principal : undefined) ?? owner,
    ...(times.attempts && { attempts: times.attempts }),
  };
}

/** The audit row of a call the turn skipped (RT-13): never dispatched, answered `cancelled`; it names the session's `owner`. */
export function skippedCallAudit(call: ToolCallPart, owner: string | null): ToolAudit {
  return {
    toolCallId: call.id,
    toolName: call.name,
    argumentsHash: sentArgumentsHash(call),
    dispatchedArgumentsHash: null,
    verdict: 'none',
    decidedBy: null,
    status: 'cancelled',
    errorCode: null,
    permissionWaitMs: null,
    executionMs: null,
    principal: owner,
  };
}
