import type { EventObject } from 'xstate';
import type { ToolCallPart } from '../src/protocol/messages.js';
import type { ModelResponse } from '../src/protocol/model.js';
import type { TurnPhase, TurnResumeReason } from '../src/protocol/updates.js';
import { doneOutput, failedError, type EffectErrorTraits } from './effect-port.js';

/**
 * The turn chart's effect contract (machines/turn.machine.ts): the effects it asks the runtime for,
 * with their inputs; the replies it waits for, and how its guards and actions read them; the params
 * of the actions it names. The runtime's side is src/runtime/turn-effects.ts (with
 * world-state-effects.ts, mistake-limit-effect.ts and compaction-effects.ts).
 */

export interface TurnEffectInput {
  sessionId: string;
  turnId: string;
}

/** `beginTurn`'s input: a resumed turn (issue 26) writes nothing new; it reopens what storage has. */
export interface BeginTurnInput extends TurnEffectInput {
  resume: TurnResumeReason | null;
}

export interface CallModelInput extends TurnEffectInput {
  modelCallIndex: number;
  /** The token budget is spent: call without tools, told to conclude. */
  concluding?: boolean;
}

export interface SampleInput extends CallModelInput {
  sample: number;
}

/** What `prepareRequest` reports: over the compaction line, and the numbers the token budget is judged on. */
export interface PreparedOutput {
  overLine: boolean;
  /** Input plus output tokens the turn's model calls reported so far. */
  turnTokens: number;
  /** The estimated input of the request just prepared. */
  nextCallTokens: number;
}

/**
 * Issue 25: the daily token budget of the session's principal as the turn starts: what it may
 * spend in a UTC day, what it spent so far today, and when the day ends (epoch ms).
 */
export interface PrincipalBudget {
  principal: string;
  limit: number;
  spent: number;
  resetsAtMs: number;
}

/**
 * Issue 26: where a resumed turn goes on, read from what storage has of it: its last stored
 * response and the first of that response's calls still to run (`toolIndex`; past the last when
 * every call has its result, so the model is called again), and the number of its next model call.
 */
export interface ResumePoint {
  response: ModelResponse | null;
  toolIndex: number;
  modelCallIndex: number;
}

/**
 * What `beginTurn` reports: the principal's daily budget, or null when none applies (none set, no
 * principal, an admin's session); for a resumed turn (issue 26), where it goes on.
 */
export interface BeganTurn {
  principalBudget: PrincipalBudget | null;
  resumeAt?: ResumePoint;
}

export interface MistakeLimitInput extends TurnEffectInput {
  count: number;
  lastErrors: string[];
}

/** What the host's `onMistakeLimit` decided; the effect has written the guidance or the final text. */
export type MistakeDecision = { action: 'continue' } | { action: 'stop'; message: string };

export interface WriteAssistantInput extends TurnEffectInput {
  response: ModelResponse;
}

export interface SkipCallsInput extends TurnEffectInput {
  calls: ToolCallPart[];
  /** Issue 30: calls an approval batch held, whose `tool_call_started` and span went out already. */
  opened: string[];
}

/** The effects the turn asks the runtime for, with their inputs and outputs. */
export type TurnEffects = {
  /**
   * Samples the four world-state sections and appends the changed ones (CW-2), then prepares this
   * call's request — pruning once if it reaches the line — and says whether it is still over (CW-7).
   */
  prepareRequest: { input: SampleInput; output: PreparedOutput };
  /** Summarizes, stores a checkpoint and installs the compacted conversation (CP-1…CP-4). */
  compact: { input: TurnEffectInput; output: { compactionId: string } };
  /**
   * Writes the turn row and opening messages, appends them, resolves the system context (RT-10);
   * reads the principal's daily token budget alongside (issue 25). A resumed turn (issue 26) writes
   * no row: it reopens the stored one, settles the call a crash left without a result (run again if
   * idempotent, else given its `interrupted` result) and says where the turn goes on.
   */
  beginTurn: { input: BeginTurnInput; output: BeganTurn };
  /** Writes and appends every agent message waiting in the mailbox (RT-4). */
  drainMailbox: { input: TurnEffectInput; output: void };
  /** Streams the model with the prepared request (deltas go straight to the live stream). */
  callModel: { input: CallModelInput; output: ModelResponse };
  /** Writes the assistant message, appends it, clears the draft (RT-18). */
  writeAssistant: { input: WriteAssistantInput; output: void };
  /** RT-13: `cancelled` results, in order, for calls that were never executed (a call that already has its result is left alone). */
  skipToolCalls: { input: SkipCallsInput; output: void };
  /**
   * GR-2: asks the agent's `onMistakeLimit`, then writes its guidance as a user-side note or its
   * message as the final answer; without a callback it stops with an explanatory message (seed 003).
   * A callback that throws or answers nonsense: `mistake_limit`.
   */
  consultMistakeLimit: { input: MistakeLimitInput; output: MistakeDecision };
  /** Waits until the session's hold is released (a paused task resumes). */
  awaitRelease: { input: TurnEffectInput; output: void };
};

/** The params of the runtime's `emitPhase`: the `phase_changed` update. */
export interface PhaseParams {
  phase: TurnPhase;
}

// The replies, as the chart reads them: one typed reader per reply the turn waits for.

/** What `beginTurn` reported: the principal's daily budget (absent from a runtime that reports none). */
export const beganOf = (event: EventObject) => doneOutput<Partial<BeganTurn> | undefined>(event);
/** What `prepareRequest` reported. */
export const preparedOf = (event: EventObject) => doneOutput<Partial<PreparedOutput>>(event);
/** The model's response from `callModel`. */
export const responseOf = (event: EventObject) => doneOutput<ModelResponse>(event)!;
/** What `onMistakeLimit` decided. */
export const mistakeDecisionOf = (event: EventObject) => doneOutput<MistakeDecision>(event);
/** What a failed effect's error says about itself (an overflow, output already produced, a checkpoint not installed). */
export const errorTraitsOf = (event: EventObject) => failedError(event) as EffectErrorTraits;
