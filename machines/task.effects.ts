import type { DoneActorEvent, EventObject } from 'xstate';
import type { TaskState } from './task.machine.js';

/**
 * The task chart's effect contract (machines/task.machine.ts): the actors the runtime supplies —
 * the admission gate, the agent session the task drives, the running clock — with their inputs,
 * what the chart tells them and what they report back; and the params of the actions it names.
 * The runtime's side is src/tasks/task-runner.ts (with session-driver.ts and running-time.ts).
 */

/** The risk levels of the seed's admission (R1 lowest). */
export type RiskLevel = 'R1' | 'R2' | 'R3' | 'R4' | 'R5';

/** What the host's admission gate (`admit`, a promise actor given `{ taskId }`) decides. */
export type AdmissionDecision = { approve: true; risk: RiskLevel; token?: string } | { approve: false; reason: string };

/** What the chart tells its session (`session`, a callback actor). */
export type SessionOrder =
  | { type: 'run_turn'; index: number }
  | { type: 'hold' }
  | { type: 'release' }
  | { type: 'abort' };

export interface SessionActorInput {
  taskId: string;
}

/** How the task's turn ended, as the session reports it. */
export type TurnEnd = { status: 'completed' } | { status: 'failed' | 'cancelled' | 'timed_out' | 'interrupted'; code: string; message: string };

/** What the session reports back. */
export type SessionReport =
  /** The turn ended. */
  | { type: 'session.turn_finished'; end: TurnEnd }
  /** The turn is held at its checkpoint (before a model call). */
  | { type: 'session.held' }
  /** The aborted turn is over (or cleaning up failed: it is best effort). */
  | { type: 'session.aborted' }
  /** It could not go on (storage failed, it closed or was lost to another owner). */
  | { type: 'session.failed'; message: string };

/**
 * The running clock's input. The clock is supplied by the runtime, which knows the task's max
 * duration and the RUNNING time it has spent (a recovered task's too); it counts while it lives,
 * from one `running` to the next, and sends `clock.expired` once the time is spent.
 */
export interface RunningClockInput {
  taskId: string;
}

/** What the running clock reports: the task has been RUNNING for its max duration (LC-4). */
export type ClockExpired = { type: 'clock.expired' };

/** A state change: its target and its reason (the params of the runtime's `recordTransition`). */
export interface Change {
  to: TaskState;
  reason: string;
}

/** The params of the runtime's `announceCreated`: `session_created` with the admission's risk level. */
export interface CreatedParams {
  risk: RiskLevel;
  token: string | null;
}

/** The params of the runtime's `announceRecovered`: the state a recovered task goes back to. */
export interface RecoveredParams {
  state: TaskState;
}

/** The params of the runtime's `reportError`: the failure that ends the task. */
export interface ErrorParams {
  code: string;
  message: string;
}

/** The params of the runtime's `announceClosed`: `session_closed` once the task is terminal. */
export interface ClosedParams {
  finalState: TaskState;
  reason: string;
}

/** The admission gate's decision, read on its done event. */
export function admissionOf(event: EventObject): AdmissionDecision {
  return (event as DoneActorEvent<AdmissionDecision>).output;
}

/** The gate's approval, read on the transition its `approved` guard took. */
export function approvalOf(event: EventObject): Extract<AdmissionDecision, { approve: true }> {
  return admissionOf(event) as Extract<AdmissionDecision, { approve: true }>;
}
