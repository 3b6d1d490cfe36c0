import type { FailureCode, TurnOutcome } from '../src/protocol/outcome.js';
import { messageOf } from '../src/protocol/error-message.js';

/** How a failed effect is reported: a `TurnFailure`-like error carries its own code (RT-9). */
export function failureOf(error: unknown, fallback: FailureCode): Extract<TurnOutcome, { status: 'failed' }> {
  const code = (error as { code?: unknown } | null)?.code;
  const message = messageOf(error);
  return { status: 'failed', code: typeof code === 'string' && isFailureCode(code) ? code : fallback, message };
}

const FAILURE_CODES: ReadonlySet<string> = new Set<FailureCode>([
  'model_error',
  'model_protocol_error',
  'persistence_error',
  'chat_state_error',
  'compaction_error',
  'permission_denied',
  'doom_loop',
  'max_model_calls',
  'actor_stopped',
  'tool_call_crashed',
  'user_project_context_error',
  'project_instruction_error',
  'skill_catalog_task_error',
  'hook_failed',
  'hook_timeout',
  'mistake_limit',
  'stalled',
  'budget_exhausted',
]);

function isFailureCode(code: string): code is FailureCode {
  return FAILURE_CODES.has(code);
}
