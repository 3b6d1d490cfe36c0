import type { ToolResultStatus } from './messages.js';
import type { FailureCode } from './outcome.js';
import type { LoopTracker } from '../../machines/guardrails.js';

/** A tool call's result before it becomes a stored message. */
export interface ToolResult {
  status: ToolResultStatus;
  content: string;
}

/** Why a tool call ended the turn, if it did (RT-12, RT-16, RT-17). */
export type TurnTermination = { kind: 'cancelled' } | { kind: 'failed'; code: FailureCode; message: string };

/** Output of one tool-call actor, read by the turn. */
export interface ToolCallOutput {
  toolCallId: string;
  result: ToolResult;
  termination: TurnTermination | null;
  /** The run of consecutive calls after this one (RT-14, GR-1). */
  loop: LoopTracker;
}

export type AuthorizationDecision =
  | { decision: 'allow' }
  | { decision: 'deny'; reason?: string }
  | { decision: 'ask'; paths?: string[] };

/** A failure an effect reports to a machine: the machine turns it into the turn's outcome. */
export class TurnFailure extends Error {
  constructor(
    readonly code: FailureCode,
    message: string,
  ) {
    super(message);
    this.name = 'TurnFailure';
  }
}
