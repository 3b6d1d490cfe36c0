import { createActor, fromCallback, fromPromise, toPromise, type Actor, type EventObject, type InspectionEvent } from 'xstate';
import { COMMAND_TARGET, taskMachine, TERMINAL_TASK_STATES, type TaskContext, type TaskOutput, type TaskReply } from '../../machines/task.machine.js';
import type { AdmissionDecision, Change, RunningClockInput, SessionActorInput, SessionOrder } from '../../machines/task.effects.js';
import type { SessionStorage } from '../../storage/session-storage.js';
import type { TaskControl, TaskRow, TaskStorage } from '../../storage/task-storage.js';
import { REAL_CLOCK, type ChartClock } from '../runtime/chart-clock.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import { RunningTime } from './running-time.js';
import { SessionDriver } from './session-driver.js';
import type { TaskJournal } from './task-journal.js';
import type { Warn } from '../protocol/log-fields.js';

/** The host's admission gate (L3): it sees the stored task and approves with a risk level or rejects. */
export type AdmissionGate = (task: TaskRow) => AdmissionDecision | Promise<AdmissionDecision>;

/** Approves every task at the lowest risk: the gate a worker runs with unless given one. */
export const approveAll: AdmissionGate = () => ({ approve: true, risk: 'R1' });

const DEFAULT_ABORT_CLEANUP_MS = 10_000;

export interface TaskRunnerDeps {
  task: TaskRow;
  handle: SessionHandle;
  sessions: SessionStorage;
  tasks: TaskStorage;
  journal: TaskJournal;
  admit: AdmissionGate;
  now: () => number;
  newId: () => string;
  warn: Warn;
  abortCleanupMs?: number;
  /** LC-4: RUNNING time the task has already spent, as `runningTimeOf` reads it from the task's events; 0 for a new task. */
  runningMs?: number;
  /** Issue 27: the submitter's W3C traceparent, from the task's message: each turn's span is its child. */
  traceParent?: string;
  clock?: ChartClock;
  /** XState inspection of the task actor (the generated paths record its transitions). */
  inspect?: (event: InspectionEvent) => void;
}

/**
 * One task on one worker: the task chart with its effects supplied — the gate, the session driver,
 * and the journal that makes each transition durable (and then published). Control requests are
 * read from the task row, where they are recorded before any notice is sent, and applied once each.
 */
export class TaskRunner {
  readonly actor: Actor<typeof taskMachine>;
  readonly done: Promise<TaskOutput>;
  private appliedControl: number;
  /** The task has been RUNNING before (`startedAtMs` is stored once). */
  private started: boolean;
  private driver: SessionDriver | null = null;
  /** The chart's running clock: the max duration, counted over RUNNING time only. */
  private readonly runningTime: RunningTime;

  constructor(private readonly deps: TaskRunnerDeps) {
    const { task } = deps;
    this.appliedControl = task.controlSeq;
    this.started = task.startedAtMs !== null;
    this.runningTime = new RunningTime(task.spec.maxDurationMs, deps.runningMs ?? 0, deps.clock ?? REAL_CLOCK, deps.now);
    const machine = this.provided();
    this.actor = createActor(machine, {
      input: {
        taskId: task.id,
        turnCount: task.spec.prompts.length,
        turnsDone: task.turnsDone,
        startState: startStateOf(task),
        abortCleanupMs: deps.abortCleanupMs ?? DEFAULT_ABORT_CLEANUP_MS,
      },
      ...(deps.clock && { clock: deps.clock }),
      ...(deps.inspect && { inspect: deps.inspect }),
    });
    this.done = toPromise(this.actor);
  }

  start(): void {
    this.actor.start();
    // A request recorded while no worker ran the task (or whose notice was lost) is still to be applied.
    const { task } = this.deps;
    if (task.control && isPending(task.control, task)) this.apply(task.control);
  }

  /** Applies a control request now; the chart's answer (a refusal is a typed result). */
  command(control: TaskControl): TaskReply {
    const commandId = `ctl-${this.deps.newId()}`;
    if (this.actor.getSnapshot().status !== 'active') {
      return { ok: false, error: { code: 'InvalidTransition', from: this.state, to: COMMAND_TARGET[control] } };
    }
    this.actor.send({ type: `task.${control}`, commandId });
    const reply = this.actor.getSnapshot().context.reply;
    return reply?.commandId === commandId ? reply.result : { ok: false, error: { code: 'InvalidTransition', from: this.state, to: COMMAND_TARGET[control] } };
  }

  /** Stops the chart without recording anything: the worker shuts down and another resumes the task. */
  halt(): void {
    this.driver?.detach();
    this.actor.stop();
  }

  get state(): TaskContext['state'] {
    return this.actor.getSnapshot().context.state;
  }

  /** Reads the task row and applies a control request not applied yet (a notice arrived, or a checkpoint passed). */
  async checkControl(): Promise<void> {
    const row = await this.deps.tasks.getTask(this.deps.task.id);
    if (!row?.control || row.controlSeq <= this.appliedControl) return;
    this.appliedControl = row.controlSeq;
    const reply = this.apply(row.control);
    if (!reply.ok && this.actor.getSnapshot().status === 'active') {
      await this.deps.journal
        .append('warning', { code: 'control_refused', message: `${row.control} refused: the task is ${reply.error.from}`, details: reply.error })
        .catch(() => undefined);
    }
  }

  private apply(control: TaskControl): TaskReply {
    return this.command(control);
  }

  private provided() {
    const { task, journal, admit, handle } = this.deps;
    const record = (type: Parameters<TaskJournal['append']>[0], data: Record<string, unknown>, change: Parameters<TaskJournal['append']>[2] = null) =>
      void journal.append(type, data, change).catch(() => undefined);
    return taskMachine.provide({
      actors: {
        admit: fromPromise(async () => admit((await this.deps.tasks.getTask(task.id)) ?? task)),
        session: fromCallback<SessionOrder, SessionActorInput>(({ receive, sendBack }) => {
          const driver = new SessionDriver(
            {
              taskId: task.id,
              spec: task.spec,
              handle,
              storage: this.deps.sessions,
              journal,
              newId: this.deps.newId,
              onCheckpoint: () => void this.checkControl().catch(() => undefined),
              warn: this.deps.warn,
              ...(this.deps.traceParent && { traceParent: this.deps.traceParent }),
            },
            sendBack,
          );
          this.driver = driver;
          receive((order) => driver.receive(order));
          return () => driver.stop();
        }),
        // Counts while the chart is in `running`; stopping the actor (a pause, or the end) stops the count.
        runningClock: fromCallback<EventObject, RunningClockInput>(({ sendBack }) => this.runningTime.run(() => sendBack({ type: 'clock.expired' }))),
      },
      actions: {
        recordTransition: ({ context }: { context: TaskContext }, params: Change) =>
          record('state_changed', { from_state: context.state, to_state: params.to, reason: params.reason }, this.changeFor(params)),
        announceCreated: (_, params) =>
          record(
            'session_created',
            { state: 'RUNNING', risk_level: params.risk, session_token: params.token, agent_session_id: handle.id, metadata: task.spec.metadata },
            { riskLevel: params.risk },
          ),
        announceRecovered: (_, params) =>
          record('state_changed', { from_state: params.state, to_state: params.state, reason: 'recovered_from_checkpoint', checkpoint_id: task.lastCheckpoint }),
        reportError: (_, params) => record('error', { code: params.code, message: params.message, recoverable: false }),
        announceClosed: (_, params) => record('session_closed', { final_state: params.finalState, reason: params.reason }),
      },
    });
  }

  private changeFor(change: Change) {
    const now = this.deps.now();
    const first = change.to === 'RUNNING' && !this.started;
    if (first) this.started = true;
    return {
      state: change.to,
      reason: change.reason,
      ...(first && { startedAtMs: now }),
      ...(TERMINAL_TASK_STATES.has(change.to) && { finishedAtMs: now }),
    };
  }
}

function startStateOf(task: TaskRow): 'PENDING' | 'RUNNING' | 'PAUSED' | 'ABORTING' {
  if (task.state === 'RUNNING' || task.state === 'PAUSED' || task.state === 'ABORTING') return task.state;
  return 'PENDING';
}

/** Whether the recorded request is not in effect yet in the state the task was stored in. */
function isPending(control: TaskControl, task: TaskRow): boolean {
  if (control === 'pause') return task.state === 'RUNNING';
  if (control === 'resume') return task.state === 'PAUSED';
  return task.state === 'RUNNING' || task.state === 'PAUSED';
}
