/** Turn outcomes (RT-9). The same object reaches `waitForTurn` and the `turn_finished` update. */

import { z } from 'zod';
import type { FinishReason } from './model.js';
import type { TokenUsage } from './usage.js';

export type FailureCode =
  | 'model_error'
  | 'model_protocol_error'
  | 'persistence_error'
  | 'chat_state_error'
  | 'compaction_error'
  | 'permission_denied'
  | 'doom_loop'
  | 'max_model_calls'
  | 'actor_stopped'
  /** A tool-call actor crashed inside the runtime (say, a tool schema that throws). */
  | 'tool_call_crashed'
  | 'user_project_context_error'
  | 'project_instruction_error'
  | 'skill_catalog_task_error'
  /** RL-4: a context hook threw, answered what it may not (a system part over its limit, say) — fails closed. */
  | 'hook_failed'
  /** RL-4: a context hook passed its time limit. */
  | 'hook_timeout'
  /** GR-2: the mistake breaker's limit was reached with no `onMistakeLimit`, or that callback failed. */
  | 'mistake_limit'
  /** The turn made no progress (no update) for its agent's `stallTimeoutMs`. */
  | 'stalled'
  /** The last call made under the token budget still asked for tools. */
  | 'budget_exhausted'
  /** Issue 30: a tool call timed out (after its retries) and its retry policy says `continueLoop: false`. */
  | 'tool_timeout';

/** Why a tool call ended the turn, if it did (RT-12, RT-16, RT-17). */
export type TurnTermination = { kind: 'cancelled' } | { kind: 'failed'; code: FailureCode; message: string };

/** Which guardrail ended a completed turn early, with an explanatory final text. */
export type StoppedBy = 'mistake_limit' | 'token_budget';

/**
 * `usage` is the sum over the turn's model calls (compaction summaries included) of what the model
 * port reported; absent when no call reported any. It lives in memory only: an outcome read back
 * from storage has none. `finishReason` is the final response's.
 */
export type TurnOutcome =
  | { status: 'completed'; finalText: string; finishReason?: FinishReason; usage?: TokenUsage; stoppedBy?: StoppedBy }
  | { status: 'failed'; code: FailureCode; message: string; usage?: TokenUsage }
  | { status: 'cancelled'; usage?: TokenUsage }
  /** The run went past its agent's `runTimeoutMs` (RL-3): cancelled the way a cancel does. */
  | { status: 'timed_out'; message: string; usage?: TokenUsage };

/** Stored turn status (RT-8): phases are never stored, only these. */
export const turnStatusSchema = z.enum(['queued', 'running', 'completed', 'failed', 'cancelled', 'timed_out', 'interrupted']);
export type StoredTurnStatus = z.infer<typeof turnStatusSchema>;

export function failed(code: FailureCode, message: string): TurnOutcome {
  return { status: 'failed', code, message };
}
