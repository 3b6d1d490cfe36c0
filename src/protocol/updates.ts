import type { Plan } from './plan.js';
import type { TurnOutcome } from './outcome.js';
import type { ToolResultStatus } from './messages.js';

/** The live phases of a turn (RT-8). Live only: never stored, never a checkpoint. */
export type TurnPhase =
  | 'starting'
  | 'running_model'
  | 'compacting'
  | 'running_tools'
  | 'waiting_permission'
  /** Held at a checkpoint before a model call until the hold is released (a paused task). */
  | 'paused'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'timed_out';

/** A turn waiting behind the running one (RL-2), in the order it will start. */
export interface QueuedTurnView {
  turnId: string;
  clientRequestId: string;
}

/** Live status of a tool call as the UI sees it. */
export type LiveToolCallStatus = 'validating' | 'waiting_permission' | 'running' | ToolResultStatus;

export type SessionUpdate =
  | { type: 'turn_started'; clientRequestId: string }
  /**
   * Issue 26: a turn whose host went away (a restart, a crash, a lease taken from a dead owner, a
   * session evicted while it waited for an approval) goes on here under the same turnId. `fromSequence`
   * is the first update of the continuation; `reason` says how the turn came here.
   */
  | { type: 'turn_resumed'; clientRequestId: string; fromSequence: number; reason: TurnResumeReason }
  | { type: 'phase_changed'; phase: TurnPhase }
  | { type: 'text_delta'; text: string }
  | { type: 'reasoning_delta'; text: string }
  | { type: 'draft_cleared' }
  | { type: 'tool_call_started'; toolCallId: string; name: string; status: LiveToolCallStatus }
  | { type: 'tool_call_progress'; toolCallId: string; progress: unknown }
  | { type: 'tool_call_finished'; toolCallId: string; status: ToolResultStatus }
  | { type: 'permission_requested'; toolCallId: string; name: string; paths: string[] }
  /** `expired`: nobody answered within the agent's `approvalTimeoutMs` (issue 26); the call is denied. */
  | { type: 'permission_resolved'; toolCallId: string; decision: PermissionDecision | 'cancelled' | 'actor_stopped' | 'expired' }
  | { type: 'plan_updated'; plan: Plan }
  /**
   * Issue 30: a `switch_agent` call switched the session's agent inside the run (the seed's
   * `agent.switch` run event); the next model call of the turn is the new agent's.
   */
  | { type: 'agent_switched'; from: string; to: string; toolCallId: string; reason?: string }
  /** The session's queue of waiting turns changed (a turn was queued, started or cancelled); carries the whole queue. */
  | { type: 'queue_updated'; queue: QueuedTurnView[] }
  /** A guardrail (GR-1, GR-2, the token budget) reached a threshold: `soft` hints and goes on, `hard` stops. */
  | { type: 'guardrail_triggered'; rule: GuardrailRule; level: 'soft' | 'hard'; toolName?: string; count: number }
  | { type: 'turn_finished'; outcome: TurnOutcome };

/** `host_restarted`: its host started again; `owner_lost`: another host took the lease of a dead owner; `reopened`: a session parked while it waited for an approval was opened again. */
export type TurnResumeReason = 'host_restarted' | 'owner_lost' | 'reopened';

/** `loop`: identical consecutive calls; `cycle`: a repeated sequence of calls; `mistake_limit`: steps whose calls all failed; `token_budget`: the turn's tokens. */
export type GuardrailRule = 'loop' | 'cycle' | 'mistake_limit' | 'token_budget';

export type PermissionDecision = 'allow_once' | 'deny';

export const UPDATE_VERSION = 7;

/** RT-19: the envelope every update travels in. `sequence` is per session, from 1, gap-free. */
export interface UpdateEnvelope {
  version: typeof UPDATE_VERSION;
  sessionId: string;
  turnId: string;
  sequence: number;
  occurredAtMs: number;
  update: SessionUpdate;
}
