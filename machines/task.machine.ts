import { assign, fromCallback, fromPromise, sendTo, setup, type EventObject } from 'xstate';
import { notProvided } from './not-provided.js';
import { admissionOf, approvalOf } from './task.effects.js';
import type { AdmissionDecision, Change, ClockExpired, ClosedParams, CreatedParams, ErrorParams, RecoveredParams, RiskLevel, RunningClockInput, SessionActorInput, SessionOrder, SessionReport, TurnEnd } from './task.effects.js';
import { messageOf } from '../src/protocol/error-message.js';

/**
 * A task (seed 002, LC-1…LC-4): one agent session driven through its turns under a lifecycle.
 *
 *   PENDING → RUNNING | REJECTED
 *   RUNNING → PAUSED | ABORTING | COMPLETED | FAILED
 *   PAUSED  → RUNNING | ABORTING
 *   ABORTING → ABORTED
 *
 * Admission is a host-provided gate (`admit`); the session is a child actor the runtime provides
 * (`session`), told to run a turn, hold at its next checkpoint (before a model call), release,
 * or abort. Pause, resume and abort are commands: the chart decides and leaves the answer in
 * `context.reply`; a transition LC-1 does not allow is refused with `InvalidTransition`, never thrown.
 * A task recovered by another worker starts where its stored state says it was. What the chart
 * asks of the runtime, and hears back, is machines/task.effects.ts.
 *
 * Every change of state the chart makes is one of LC-1's (test/machines/task.machine.test.ts drives
 * each state with each event to check it). So the ways a task ends sit where LC-1 allows them: the
 * max duration and a failing session end a RUNNING task FAILED, while a PAUSED task — which LC-1
 * lets only resume or abort — ends through ABORTING: a session that gives out, or a held turn that
 * ends under the pause, abort it, with that as the reason. The max duration counts RUNNING time
 * only: its clock is an actor of the `running` state, so a pause stops it and a resume goes on
 * with what is left.
 */

export type TaskState = 'PENDING' | 'RUNNING' | 'PAUSED' | 'ABORTING' | 'ABORTED' | 'COMPLETED' | 'FAILED' | 'REJECTED';

/** LC-1's valid transitions; everything else is refused. */
export const TASK_TRANSITIONS: Readonly<Record<TaskState, readonly TaskState[]>> = {
  PENDING: ['RUNNING', 'REJECTED'],
  RUNNING: ['PAUSED', 'ABORTING', 'COMPLETED', 'FAILED'],
  PAUSED: ['RUNNING', 'ABORTING'],
  ABORTING: ['ABORTED'],
  ABORTED: [],
  COMPLETED: [],
  FAILED: [],
  REJECTED: [],
};

export const TERMINAL_TASK_STATES: ReadonlySet<TaskState> = new Set(['ABORTED', 'COMPLETED', 'FAILED', 'REJECTED']);

/** Whether LC-1 allows `from → to`. */
export function isTaskTransition(from: TaskState, to: TaskState): boolean {
  return TASK_TRANSITIONS[from].includes(to);
}

/** What a command asked for: the state it would lead to. */
export type TaskCommand = 'pause' | 'resume' | 'abort';

export const COMMAND_TARGET: Readonly<Record<TaskCommand, TaskState>> = { pause: 'PAUSED', resume: 'RUNNING', abort: 'ABORTING' };

export type TaskReply = { ok: true } | { ok: false; error: { code: 'InvalidTransition'; from: TaskState; to: TaskState } };

export interface TaskInput {
  taskId: string;
  /** Turns the task runs, one per prompt. */
  turnCount: number;
  /** Turns already completed (a recovered task continues after them). */
  turnsDone: number;
  /** Where the task starts: PENDING for a new one, the stored state for one recovered after its worker died. */
  startState: 'PENDING' | 'RUNNING' | 'PAUSED' | 'ABORTING';
  /** How long an abort's cleanup may take before the task is ABORTED regardless (LC-4). */
  abortCleanupMs: number;
}

export interface TaskContext extends TaskInput {
  state: TaskState;
  /** Why the task is where it is (the last transition's reason). */
  reason: string;
  risk: RiskLevel | null;
  /** A pause was asked for and takes effect at the next checkpoint. */
  pauseRequested: boolean;
  /** Why the abort under way was made: `aborted` when asked for, else the failure that made it; ABORTED says so. */
  abortReason: string;
  reply: { commandId: string; result: TaskReply } | null;
}

export type TaskEvent =
  | { type: 'task.pause'; commandId: string }
  | { type: 'task.resume'; commandId: string }
  | { type: 'task.abort'; commandId: string }
  | SessionReport
  | ClockExpired;

export interface TaskOutput {
  state: TaskState;
  reason: string;
}

type Commanded = Extract<TaskEvent, { commandId: string }>;

/**
 * The actions that move the task to `to`, for a reason fixed or read from the event (or the context):
 * the durable record first (it reads the state being left from the context), then the context.
 */
function moveTo(to: TaskState, reason: string | ((event: never, context: TaskContext) => string)) {
  const params = ({ context, event }: { context: TaskContext; event: unknown }): Change => ({
    to,
    reason: typeof reason === 'string' ? reason : reason(event as never, context),
  });
  return [
    { type: 'recordTransition' as const, params },
    { type: 'setState' as const, params },
  ];
}

const ok = (event: TaskEvent): TaskContext['reply'] => ({ commandId: (event as Commanded).commandId, result: { ok: true } });

export const taskMachine = setup({
  types: {
    input: {} as TaskInput,
    context: {} as TaskContext,
    events: {} as TaskEvent,
    output: {} as TaskOutput,
  },
  actors: {
    /** The host's admission gate (L3): approve with a risk level, or reject with a reason. */
    admit: fromPromise<AdmissionDecision, { taskId: string }>(notProvided('task', 'admit')),
    /** The agent session the task drives, supplied by the runtime. */
    session: fromCallback<SessionOrder, SessionActorInput>(notProvided('task', 'session')),
    /** LC-4's max duration, counted over RUNNING time only (it lives in `running`), supplied by the runtime. */
    runningClock: fromCallback<EventObject, RunningClockInput>(notProvided('task', 'runningClock')),
  },
  delays: {
    abortCleanup: ({ context }) => context.abortCleanupMs,
  },
  guards: {
    approved: ({ event }) => admissionOf(event).approve,
    allTurnsDone: ({ context }) => context.turnsDone >= context.turnCount,
    pauseRequested: ({ context }) => context.pauseRequested,
    turnCompleted: ({ event }) => event.type === 'session.turn_finished' && event.end.status === 'completed',
    startsRunning: ({ context }) => context.startState === 'RUNNING',
    startsPaused: ({ context }) => context.startState === 'PAUSED',
    startsAborting: ({ context }) => context.startState === 'ABORTING',
  },
  actions: {
    /** Durably records the transition and emits `state_changed` (supplied by the task runtime). */
    recordTransition: notProvided<[unknown, Change]>('task', 'recordTransition'),
    /** Emits `session_created` with the admission's risk level. */
    announceCreated: notProvided<[unknown, CreatedParams]>('task', 'announceCreated'),
    /** Emits `state_changed` with reason `recovered_from_checkpoint` (LC-4). */
    announceRecovered: notProvided<[unknown, RecoveredParams]>('task', 'announceRecovered'),
    /** Emits `error` for the failure that ends the task. */
    reportError: notProvided<[unknown, ErrorParams]>('task', 'reportError'),
    /** Emits `session_closed` once the task is terminal. */
    announceClosed: notProvided<[unknown, ClosedParams]>('task', 'announceClosed'),
    /** The context's half of a state change; it runs after `recordTransition`, which reads the state being left. */
    setState: assign((_, params: Change) => ({ state: params.to, reason: params.reason })),
    /** A failure that aborts a PAUSED task: its reason is also the reason the task ends ABORTED. */
    setAbortReason: assign((_, params: { reason: string }) => ({ abortReason: params.reason })),
    refuse: assign({
      reply: ({ context, event }, params: { to: TaskState }) => ({
        commandId: (event as Commanded).commandId,
        result: { ok: false, error: { code: 'InvalidTransition', from: context.state, to: params.to } },
      }),
    }),
    replyOk: assign({ reply: ({ event }) => ok(event) }),
    countTurn: assign({ turnsDone: ({ context }) => context.turnsDone + 1 }),
    /** The admission's risk level, kept for the task's events. */
    assignRisk: assign({ risk: ({ event }) => approvalOf(event).risk }),
    /** A pause takes effect at the next checkpoint; resuming before it did withdraws it. */
    requestPause: assign({ pauseRequested: true }),
    withdrawPause: assign({ pauseRequested: false }),
    // The orders the session gets.
    runTurn: sendTo('session', ({ context }) => ({ type: 'run_turn', index: context.turnsDone }) satisfies SessionOrder),
    holdSession: sendTo('session', { type: 'hold' } satisfies SessionOrder),
    releaseSession: sendTo('session', { type: 'release' } satisfies SessionOrder),
    abortSession: sendTo('session', { type: 'abort' } satisfies SessionOrder),
  },
}).createMachine({
  id: 'task',
  context: ({ input }) => ({
    taskId: input.taskId,
    turnCount: input.turnCount,
    turnsDone: input.turnsDone,
    startState: input.startState,
    abortCleanupMs: input.abortCleanupMs,
    state: input.startState,
    reason: 'submitted',
    risk: null,
    pauseRequested: false,
    abortReason: 'aborted',
    reply: null,
  }),
  // A command in a state that does not take it: LC-1 does not allow that transition.
  on: {
    'task.pause': { actions: { type: 'refuse', params: { to: 'PAUSED' } } },
    'task.resume': { actions: { type: 'refuse', params: { to: 'RUNNING' } } },
    'task.abort': { actions: { type: 'refuse', params: { to: 'ABORTING' } } },
  },
  initial: 'starting',
  states: {
    /** A new task waits for admission; a recovered one goes back where its worker left it. */
    starting: {
      always: [
        { guard: 'startsRunning', target: '#task.active.live.running', actions: { type: 'announceRecovered', params: { state: 'RUNNING' } } },
        { guard: 'startsPaused', target: '#task.active.live.paused.between', actions: { type: 'announceRecovered', params: { state: 'PAUSED' } } },
        { guard: 'startsAborting', target: '#task.active.aborting', actions: { type: 'announceRecovered', params: { state: 'ABORTING' } } },
        { target: 'pending' },
      ],
    },
    pending: {
      invoke: {
        id: 'admit',
        src: 'admit',
        input: ({ context }) => ({ taskId: context.taskId }),
        onDone: [
          {
            guard: 'approved',
            target: 'active',
            actions: [
              'assignRisk',
              {
                type: 'announceCreated',
                params: ({ event }) => {
                  const decision = approvalOf(event);
                  return { risk: decision.risk, token: decision.token ?? null };
                },
              },
              ...moveTo('RUNNING', 'approved'),
            ],
          },
          {
            target: 'rejected',
            actions: moveTo('REJECTED', (event: { output: Extract<AdmissionDecision, { approve: false }> }) => event.output.reason),
          },
        ],
        // A gate that fails is no approval.
        onError: {
          target: 'rejected',
          actions: moveTo('REJECTED', (event: { error: unknown }) => `admission failed: ${messageOf(event.error)}`),
        },
      },
    },
    /** The session lives as long as the task is RUNNING, PAUSED or ABORTING. */
    active: {
      invoke: { id: 'session', src: 'session', input: ({ context }) => ({ taskId: context.taskId }) },
      initial: 'live',
      states: {
        /** RUNNING or PAUSED: the task can be aborted (LC-1). What else ends it depends on which. */
        live: {
          on: {
            'task.abort': {
              target: '#task.active.aborting',
              actions: ['replyOk', ...moveTo('ABORTING', 'abort_requested')],
            },
          },
          initial: 'running',
          states: {
            /** RUNNING: LC-1's FAILED (max duration, a turn or the session failing) and COMPLETED are reached from here only. */
            running: {
              // LC-4: the max duration counts RUNNING time only — the clock lives here, so a pause stops it.
              invoke: { id: 'runningClock', src: 'runningClock', input: ({ context }) => ({ taskId: context.taskId }) },
              initial: 'next_turn',
              states: {
                next_turn: {
                  always: [
                    { guard: 'allTurnsDone', target: '#task.completed', actions: moveTo('COMPLETED', 'all_turns_completed') },
                    // A turn boundary is a checkpoint: a pause asked for during the last turn takes effect here.
                    {
                      guard: 'pauseRequested',
                      target: '#task.active.live.paused.between',
                      actions: moveTo('PAUSED', 'paused_at_checkpoint'),
                    },
                    { target: 'turn', actions: 'runTurn' },
                  ],
                },
                turn: {
                  on: {
                    'session.turn_finished': [
                      { guard: 'turnCompleted', target: 'next_turn', actions: 'countTurn' },
                      {
                        target: '#task.failed',
                        actions: [
                          { type: 'reportError', params: ({ event }) => endError(event.end) },
                          ...moveTo('FAILED', (event: { end: TurnEnd }) => `turn_${event.end.status}`),
                        ],
                      },
                    ],
                    // A hold the task has since withdrawn (resumed before it took effect) is released already.
                    'session.held': {
                      guard: 'pauseRequested',
                      target: '#task.active.live.paused.holding',
                      actions: moveTo('PAUSED', 'paused_at_checkpoint'),
                    },
                  },
                },
              },
              on: {
                'clock.expired': { target: '#task.failed', actions: moveTo('FAILED', 'timeout') },
                'session.failed': {
                  target: '#task.failed',
                  actions: [
                    { type: 'reportError', params: ({ event }) => ({ code: 'session_error', message: event.message }) },
                    ...moveTo('FAILED', (event: { message: string }) => `session_error: ${event.message}`),
                  ],
                },
                'task.pause': { actions: ['requestPause', 'holdSession', 'replyOk'] },
                // Resuming before the pause took effect withdraws it.
                'task.resume': [
                  { guard: 'pauseRequested', actions: ['withdrawPause', 'releaseSession', 'replyOk'] },
                  { actions: { type: 'refuse', params: { to: 'RUNNING' } } },
                ],
              },
            },
            /** PAUSED: LC-1 allows only RUNNING (resume) and ABORTING from here, so a failure aborts the task. */
            paused: {
              on: {
                // The session gave out (it closed, or was lost) while the task was paused: nothing can resume.
                'session.failed': {
                  target: '#task.active.aborting',
                  actions: [
                    { type: 'reportError', params: ({ event }) => ({ code: 'session_error', message: event.message }) },
                    { type: 'setAbortReason', params: ({ event }) => ({ reason: `session_error: ${event.message}` }) },
                    ...moveTo('ABORTING', (event: { message: string }) => `session_error: ${event.message}`),
                  ],
                },
              },
              initial: 'between',
              states: {
                /** Paused between turns: resuming starts the next one. */
                between: {
                  on: {
                    'task.resume': {
                      target: '#task.active.live.running.next_turn',
                      actions: ['withdrawPause', 'replyOk', ...moveTo('RUNNING', 'resumed')],
                    },
                  },
                },
                /** Paused inside a turn, before its next model call: resuming lets that call go. */
                holding: {
                  on: {
                    'task.resume': {
                      target: '#task.active.live.running.turn',
                      actions: ['withdrawPause', 'releaseSession', 'replyOk', ...moveTo('RUNNING', 'resumed')],
                    },
                    // The held turn ended under the pause (cancelled or timed out from outside the task; a held
                    // turn cannot complete: it holds before a model call). There is nothing left to resume.
                    'session.turn_finished': {
                      target: '#task.active.aborting',
                      actions: [
                        { type: 'reportError', params: ({ event }) => endError(event.end) },
                        { type: 'setAbortReason', params: ({ event }) => ({ reason: `turn_${event.end.status}` }) },
                        ...moveTo('ABORTING', (event: { end: TurnEnd }) => `turn_${event.end.status}`),
                      ],
                    },
                  },
                },
              },
            },
          },
        },
        /** LC-4: the model stream and the running tool are cancelled, then ABORTED within the cleanup bound. */
        aborting: {
          entry: 'abortSession',
          after: { abortCleanup: { target: '#task.aborted', actions: moveTo('ABORTED', 'cleanup_timed_out') } },
          on: {
            // Cleanup is best effort (seed 002): a session that fails while cleaning up still reports aborted.
            // ABORTED says why the abort was made: asked for (`aborted`), or the failure that aborted a paused task.
            'session.aborted': { target: '#task.aborted', actions: moveTo('ABORTED', (_: unknown, context) => context.abortReason) },
          },
        },
      },
    },
    rejected: { type: 'final', entry: { type: 'announceClosed', params: closing } },
    completed: { type: 'final', entry: { type: 'announceClosed', params: closing } },
    failed: { type: 'final', entry: { type: 'announceClosed', params: closing } },
    aborted: { type: 'final', entry: { type: 'announceClosed', params: closing } },
  },
  output: ({ context }) => ({ state: context.state, reason: context.reason }),
});

/** The error a turn that did not complete reports (a completed one reports none, and never reaches here). */
function endError(end: TurnEnd): { code: string; message: string } {
  return end.status === 'completed' ? { code: 'turn_completed', message: 'the turn completed' } : { code: end.code, message: end.message };
}

function closing({ context }: { context: TaskContext }) {
  return { finalState: context.state, reason: context.reason };
}
