import type { AnyMachineSnapshot, EventObject } from 'xstate';
import { fromCallback, fromPromise } from 'xstate';
import { taskMachine, type TaskContext, type TaskInput } from '../../machines/task.machine.js';
import type { AdmissionDecision, RunningClockInput, SessionActorInput, SessionOrder } from '../../machines/task.effects.js';
import type { ChartModel, ModelState } from './tour.js';

/**
 * The task chart for traversal. Its own events are commands (pause, resume, abort), which a path
 * issues in every state — each state takes or refuses each one; the rest come from the admission
 * gate, from the session (a turn ended, it holds at its checkpoint, it finished aborting, it could
 * not start a turn, it closed under a paused task, its held turn was cancelled from outside), from
 * the running clock (the max duration, counted while RUNNING) and from the abort's cleanup bound.
 * The environment keeps what the session's turn is doing, so a path never asks the session for
 * something it cannot do. Each scenario starts the task where a worker may find it: new (PENDING),
 * or recovered RUNNING, PAUSED or ABORTING.
 */

export interface TaskScenario {
  startState: TaskInput['startState'];
}

export const TASK_SCENARIOS: TaskScenario[] = [{ startState: 'PENDING' }, { startState: 'RUNNING' }, { startState: 'PAUSED' }, { startState: 'ABORTING' }];

/**
 * The session's turn, as far as the task can tell: none; fresh (just started: it can still fail to
 * start); open (on its way to, or in, a model call, no pause asked for); pausing (a pause reached it
 * before its next model call: it holds at that checkpoint); calling (a pause reached it during a
 * model call: the answer decides whether it ends or holds at the next checkpoint); held.
 */
export type TurnCourse = 'none' | 'fresh' | 'open' | 'pausing' | 'calling' | 'held';

export interface TaskEnv {
  turn: TurnCourse;
}

export const TASK_TURNS = 2;
export const MAX_DURATION_MS = 60_000;
export const ABORT_CLEANUP_MS = 5_000;

/** The running clock's report: the task has been RUNNING for its max duration. */
export const MAX_DURATION = 'clock.expired';
export const ABORT_CLEANUP = 'xstate.after.abortCleanup.task.active.aborting';
export const ADMIT_DONE = 'xstate.done.actor.admit';
export const ADMIT_ERROR = 'xstate.error.actor.admit';

export function taskInput(scenario: TaskScenario): TaskInput {
  return { taskId: 'task', turnCount: TASK_TURNS, turnsDone: 0, startState: scenario.startState, abortCleanupMs: ABORT_CLEANUP_MS };
}

const traversalTaskMachine = taskMachine.provide({
  actors: {
    admit: fromPromise<AdmissionDecision, { taskId: string }>(() => new Promise<never>(() => undefined)),
    session: fromCallback<SessionOrder, SessionActorInput>(() => undefined),
    runningClock: fromCallback<EventObject, RunningClockInput>(() => undefined),
  },
  actions: {
    recordTransition: () => undefined,
    announceCreated: () => undefined,
    announceRecovered: () => undefined,
    reportError: () => undefined,
    announceClosed: () => undefined,
  },
});

const ctx = (s: AnyMachineSnapshot) => s.context as TaskContext;
const inTurn = (s: AnyMachineSnapshot) => s.matches({ active: { live: { running: 'turn' } } });
const isHolding = (s: AnyMachineSnapshot) => s.matches({ active: { live: { paused: 'holding' } } });
const isBetween = (s: AnyMachineSnapshot) => s.matches({ active: { live: { paused: 'between' } } });

const COMMANDS: EventObject[] = (['task.pause', 'task.resume', 'task.abort'] as const).map((type) => ({ type, commandId: '' }) as EventObject);
/** A pause that reaches the running turn while its model call is under way (the director waits for that call). */
const LATE_PAUSE = { type: 'task.pause', commandId: '', duringModelCall: true } as EventObject;

function commands({ machine, env }: ModelState<TaskEnv>): EventObject[] {
  // Aborting with no turn to cancel is over at once: no command comes in between.
  if (machine.matches({ active: 'aborting' }) && env.turn === 'none') return [];
  const late = inTurn(machine) && (env.turn === 'fresh' || env.turn === 'open') ? [LATE_PAUSE] : [];
  return [...COMMANDS, ...late];
}

function sessionEvents({ machine, env }: ModelState<TaskEnv>): EventObject[] {
  const events: EventObject[] = [];
  if (machine.matches('pending')) {
    events.push({ type: ADMIT_DONE, output: { approve: true, risk: 'R2' } } as EventObject);
    events.push({ type: ADMIT_DONE, output: { approve: false, reason: 'too risky' } } as EventObject);
    events.push({ type: ADMIT_ERROR, error: new Error('gate down') } as EventObject);
  }
  // The running clock counts RUNNING time only: it can run out only there.
  if (machine.matches({ active: { live: 'running' } })) events.push({ type: MAX_DURATION });
  if (inTurn(machine) && (env.turn === 'fresh' || env.turn === 'open' || env.turn === 'calling')) {
    events.push({ type: 'session.turn_finished', end: { status: 'completed' } } as EventObject);
    events.push({ type: 'session.turn_finished', end: { status: 'failed', code: 'model_error', message: 'provider down' } } as EventObject);
  }
  if (inTurn(machine) && (env.turn === 'pausing' || env.turn === 'calling')) events.push({ type: 'session.held' });
  // A turn fails to start only as it starts (the director arranges that failure ahead).
  if (inTurn(machine) && env.turn === 'fresh') events.push({ type: 'session.failed', message: 'storage failed' } as EventObject);
  // The session closes under a task paused between turns (while a turn is held, closing it also ends that turn: two events at once).
  if (isBetween(machine)) events.push({ type: 'session.failed', message: 'the agent session closed' } as EventObject);
  // A held turn cancelled from outside the task (its session's own API).
  if (isHolding(machine) && env.turn === 'held') events.push({ type: 'session.turn_finished', end: { status: 'cancelled', code: 'cancelled', message: 'the turn was cancelled' } } as EventObject);
  if (machine.matches({ active: 'aborting' })) {
    events.push({ type: 'session.aborted' });
    // The cleanup can outlast its bound only while a turn is there to clean up.
    if (env.turn !== 'none') events.push({ type: ABORT_CLEANUP });
  }
  return events;
}

function nextTurn(env: TaskEnv, event: EventObject, before: AnyMachineSnapshot, after: AnyMachineSnapshot): TurnCourse {
  if (after.status === 'done') return 'none';
  if (event.type === 'session.held') return 'held';
  if (event.type === 'session.aborted') return 'none';
  if (inTurn(after)) {
    // The held turn goes on; any other way into `turn` starts a new one.
    if (before.matches({ active: { live: { paused: 'holding' } } })) return 'open';
    if (inTurn(before) && event.type !== 'session.turn_finished') return turnAfterCommand(env.turn, event, ctx(after));
    return 'fresh';
  }
  if (event.type === 'session.turn_finished') return 'none';
  return env.turn;
}

/** A command while the turn runs: a pause binds it to hold (or, during a model call, lets the answer decide); resuming withdraws that. */
function turnAfterCommand(turn: TurnCourse, event: EventObject, after: TaskContext): TurnCourse {
  if (!after.pauseRequested) return turn === 'fresh' || turn === 'pausing' || turn === 'calling' ? 'open' : turn;
  if (event.type !== 'task.pause' || turn === 'pausing' || turn === 'calling') return turn;
  return (event as { duringModelCall?: boolean }).duringModelCall ? 'calling' : 'pausing';
}

export function taskModel(scenario: TaskScenario): ChartModel<TaskEnv> {
  return {
    machine: traversalTaskMachine,
    input: taskInput(scenario),
    // A task recovered RUNNING starts its turn at once.
    env: { turn: scenario.startState === 'RUNNING' ? 'fresh' : 'none' },
    events: (state) => [...commands(state), ...sessionEvents(state)],
    nextEnv: (env, event, before, after) => ({ turn: nextTurn(env, event, before, after) }),
    key: ({ machine, env }) => {
      const c = ctx(machine);
      return JSON.stringify([machine.value, machine.status, c.pauseRequested, c.turnsDone, env]);
    },
  };
}
