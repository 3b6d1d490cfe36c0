import type { DoneActorEvent, ErrorActorEvent, EventObject } from 'xstate';
import type { ToolCallPart } from '../src/protocol/messages.js';
import type { TurnTermination } from '../src/protocol/outcome.js';
import type { ToolResult } from '../src/protocol/tool-result.js';
import type { PermissionDecision } from '../src/protocol/updates.js';
import type { AuditDecision } from '../src/protocol/audit.js';
import type { LoopRules, LoopTracker, LoopVerdict } from './guardrails.js';

/**
 * What a turn and the tool-call actors it invokes (one per call) say to each other: the call's
 * input, the output the turn reads when the call is done, and the events each sends the other.
 * A contract between two charts, so it lives beside them; what each chart asks of the runtime is
 * in its `*.effects.ts`.
 */

/** What the turn gives each call. */
export interface ToolCallInput {
  sessionId: string;
  turnId: string;
  call: ToolCallPart;
  /** The run of consecutive calls before this one. */
  loop: LoopTracker;
  loopRules: LoopRules;
  /**
   * Issue 30: the call is one of a batch whose approvals are all asked before the calls' results are
   * written: it stops where it would run or write its result, and hands back what it came to (`cleared`).
   */
  holdBeforeRun?: boolean;
  /** Issue 30: what the call came to while its batch was being cleared: it now runs (or writes that result), without being screened again. */
  cleared?: ClearedCall | null;
}

/**
 * Issue 30: what a call of an approval batch came to before it ran: the arguments and decision it
 * runs with, or the result (and how it ends the turn) it will write when its turn comes.
 */
export interface ClearedCall {
  args: Record<string, unknown>;
  approvedPaths: string[];
  decision: AuditDecision | null;
  hookError: string | null;
  rewritten: boolean;
  verdict: LoopVerdict;
  /** Null when the call runs. */
  result: ToolResult | null;
  termination: TurnTermination | null;
}

export type { TurnTermination } from '../src/protocol/outcome.js';

/** What a call gives back to its turn. */
export interface ToolCallOutput {
  toolCallId: string;
  result: ToolResult;
  termination: TurnTermination | null;
  /** The run of consecutive calls after this one (RT-14, GR-1). */
  loop: LoopTracker;
  /** Issue 30: set when the call was held (`holdBeforeRun`): what it came to; its result is not written yet. */
  cleared: ClearedCall | null;
}

/**
 * What the turn sends the running call: the user's answer to its approval, a cancel (`reason:
 * 'timeout'` when the run's time limit cancels it rather than the user, `'stall'` when the no-progress
 * watchdog does), or the session stopping.
 */
export type ToolCallCommand =
  /** `principal`: who answered (issue 25); the audit row names it. */
  | { type: 'permission.resolve'; decision: PermissionDecision; principal?: string }
  | { type: 'tool.cancel'; reason?: 'timeout' | 'stall' }
  | { type: 'tool.stop' };

/** What the call tells its turn: it waits for an approval (the turn passes the request on to its session), or no longer does. */
export type ToolCallNotice =
  | { type: 'tool.permission_requested'; toolCallId: string; name: string; paths: string[] }
  | { type: 'tool.permission_settled'; toolCallId: string };

/** The output of a call's done event, as the turn's guards and actions read it (they run only on that event). */
export function callOutputOf(event: EventObject): ToolCallOutput {
  return (event as DoneActorEvent<ToolCallOutput>).output;
}

/** The error of a call's actor that crashed (`onError`), as the turn's action reads it. */
export function callErrorOf(event: EventObject): unknown {
  return (event as ErrorActorEvent).error;
}
