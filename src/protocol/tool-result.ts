import type { ToolResultStatus } from './messages.js';
import type { FailureCode } from './outcome.js';

/** A tool call's result before it becomes a stored message. */
export interface ToolResult {
  status: ToolResultStatus;
  content: string;
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
