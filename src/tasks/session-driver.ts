import type { Subscription } from 'rxjs';
import type { SessionOrder, SessionReport, TurnEnd } from '../../machines/task.effects.js';
import type { SessionStorage, TurnRow } from '../../storage/session-storage.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import type { TaskJournal } from './task-journal.js';
import type { TaskSpec } from '../protocol/task-spec.js';
import { messageOf } from '../protocol/error-message.js';
import type { Warn } from '../protocol/log-fields.js';

/** What a turn run again after its worker died is told: the conversation so far is its checkpoint. */
export const RESUME_TEXT =
  'The worker running this task stopped and another took over. Continue the task from where the conversation stands; ' +
  'tool calls reported interrupted did not finish and may need to be made again.';

const TURN_REQUEST = 'task-turn-';

export interface SessionDriverDeps {
  taskId: string;
  spec: TaskSpec;
  handle: SessionHandle;
  storage: SessionStorage;
  journal: TaskJournal;
  newId: () => string;
  /** After each checkpoint: a control request whose notice was lost is picked up here. */
  onCheckpoint: () => void;
  /** Issue 27: the submitter's W3C traceparent: every turn this driver starts is a child of it. */
  traceParent?: string;
  warn: Warn;
}

/**
 * The task's session as the task chart's child actor: it runs the turn it is told to (once —
 * a turn already started by a worker that died is continued, not repeated), holds and releases at
 * the turn's checkpoint, cancels on abort, and turns the session's updates into task events:
 * progress, logs, warnings, results and checkpoints (LC-2, LC-4).
 */
export class SessionDriver {
  private subscription: Subscription | null = null;
  private turnId: string | null = null;
  /** The start of the current turn, while it is under way. */
  private starting: Promise<string | null> | null = null;
  private turnIndex = 0;
  private aborting = false;
  private stopped = false;
  /** The worker is shutting down: the session is left as it is for the next worker to resume. */
  private detached = false;

  constructor(
    private readonly deps: SessionDriverDeps,
    private readonly sendBack: (event: SessionReport) => void,
  ) {
    // The stream completes when the session closes (it was closed, or lost to another owner): the task cannot go on.
    this.subscription = deps.handle.updates$.subscribe({ next: (update) => this.onUpdate(update), complete: () => this.failed(new Error('the agent session closed')) });
  }

  receive(order: SessionOrder): void {
    const { handle } = this.deps;
    switch (order.type) {
      case 'run_turn':
        return void this.runTurn(order.index).catch((error: unknown) => this.failed(error));
      case 'hold':
        return void handle.holdAtCheckpoint();
      case 'release':
        return handle.releaseHold();
      case 'abort':
        return void this.abort().catch((error: unknown) => {
          // Cleanup is best effort: the task is aborted all the same.
          this.deps.warn(`task ${this.deps.taskId}: cleanup after abort failed: ${messageOf(error)}`, { taskId: this.deps.taskId, sessionId: this.deps.handle.id });
          if (!this.stopped) this.sendBack({ type: 'session.aborted' });
        });
    }
  }

  /** The chart left the states the session serves: a turn still running (the task timed out or failed) is cancelled. */
  stop(): void {
    this.stopped = true;
    this.subscription?.unsubscribe();
    this.subscription = null;
    if (this.aborting || this.detached) return;
    const { handle } = this.deps;
    if (this.turnId) void handle.cancelTurn(this.turnId);
    else
      void this.starting?.then(
        async (turnId) => {
          if (turnId) await handle.cancelTurn(turnId);
        },
        () => undefined,
      );
  }

  /** Stops listening without touching the session (the worker shuts down; the task is resumed elsewhere). */
  detach(): void {
    this.detached = true;
    this.stop();
  }

  private async runTurn(index: number): Promise<void> {
    const { handle, journal, spec } = this.deps;
    handle.releaseHold();
    this.turnIndex = index;
    this.starting = this.startTurn(index);
    let turnId: string | null;
    try {
      turnId = await this.starting;
    } finally {
      this.starting = null;
    }
    if (turnId === null) return;
    this.turnId = turnId;
    // Aborted or stopped while the turn was being started: `abort` (or `stop`) cancels it, having waited for this start.
    if (this.aborting || this.stopped) return;
    const outcome = await handle.waitForTurn(turnId);
    this.turnId = null;
    if (this.aborting || this.stopped) return;
    if (outcome.status === 'unknown_turn') return this.failed(new Error(`turn ${turnId} is unknown to its session`));
    // A task's session resumes no turns (its worker's runtime is made without), so it is never parked.
    if (outcome.status === 'parked') return this.failed(new Error(`turn ${turnId} was parked`));
    if (outcome.status === 'completed') {
      const last = index === spec.prompts.length - 1;
      await journal.append('intermediate_result', { result_type: 'turn_text', data: { turn: index, text: outcome.finalText }, is_partial: !last });
      const checkpoint = `ckpt-turn-${index}`;
      await journal.append('checkpoint_created', checkpointData(checkpoint, `turn ${index + 1} of ${spec.prompts.length} completed`), {
        turnsDone: index + 1,
        lastCheckpoint: checkpoint,
      });
      this.deps.onCheckpoint();
    }
    if (!this.stopped) this.sendBack({ type: 'session.turn_finished', end: turnEnd(outcome) });
  }

  /**
   * Starts turn `index`, or finds it: a turn a dead worker started is not started again. One that
   * completed is taken as it is; one interrupted is continued by a new turn telling the model so
   * (its tool calls without a durable result were already reported interrupted, RT-25).
   */
  private async startTurn(index: number): Promise<string | null> {
    const { handle, spec, storage } = this.deps;
    const earlier = (await storage.listTurns(handle.id)).filter((t) => belongsTo(t, index));
    const last = earlier.at(-1);
    if (last?.status === 'completed') return last.id;
    const resumed = last !== undefined;
    const text = resumed ? RESUME_TEXT : spec.prompts[index]!;
    const clientRequestId = resumed ? `${TURN_REQUEST}${index}-resume-${this.deps.newId()}` : `${TURN_REQUEST}${index}`;
    const { traceParent } = this.deps;
    const submitted = await handle.submitTurn({ clientRequestId, input: [{ type: 'text', text }], trigger: 'api_action', ...(traceParent && { traceParent }) });
    if (!submitted.ok) {
      this.failed(new Error(`turn ${index} was not accepted: ${submitted.error.code}`));
      return null;
    }
    return submitted.turnId;
  }

  /** LC-4: the model stream and the running tool are cancelled; the session is done once the turn has ended. */
  private async abort(): Promise<void> {
    this.aborting = true;
    const { handle } = this.deps;
    // A turn being started is cancelled once it has started.
    const turnId = this.turnId ?? (await this.starting?.catch(() => null));
    if (turnId) {
      await handle.cancelTurn(turnId);
      await handle.waitForTurn(turnId);
    }
    handle.releaseHold();
    if (!this.stopped) this.sendBack({ type: 'session.aborted' });
  }

  /** The session could not go on; nothing is reported once the chart stopped listening (or the worker detached). */
  private failed(error: unknown): void {
    if (this.stopped) return;
    this.sendBack({ type: 'session.failed', message: messageOf(error) });
  }

  /** The session's updates as task events; text deltas stay in the session's own stream. */
  private onUpdate({ update }: UpdateEnvelope): void {
    const { journal, spec } = this.deps;
    const append = (...args: Parameters<TaskJournal['append']>) => void journal.append(...args).catch(() => undefined);
    const turn = this.turnIndex;
    switch (update.type) {
      case 'turn_started':
        return append('progress', {
          stage: 'turn_started',
          percent: Math.round((100 * turn) / spec.prompts.length),
          message: `turn ${turn + 1} of ${spec.prompts.length} started`,
        });
      case 'phase_changed':
        if (update.phase === 'paused') this.sendBack({ type: 'session.held' });
        return;
      case 'tool_call_started':
        return append('log', { level: 'info', message: `tool ${update.name} started`, details: { tool_call_id: update.toolCallId, name: update.name } });
      case 'tool_call_finished': {
        if (update.status !== 'succeeded') {
          append('warning', { code: `tool_${update.status}`, message: `tool call ${update.toolCallId} ended ${update.status}`, details: { tool_call_id: update.toolCallId } });
        }
        const checkpoint = `ckpt-tool-${update.toolCallId}`;
        void journal
          .append('checkpoint_created', checkpointData(checkpoint, `result of tool call ${update.toolCallId} stored (turn ${turn + 1})`), { lastCheckpoint: checkpoint })
          .then(() => this.deps.onCheckpoint(), () => undefined);
        return;
      }
      case 'permission_requested':
        return append('warning', { code: 'approval_required', message: `tool ${update.name} waits for an approval nobody gives to a task`, details: { tool_call_id: update.toolCallId } });
      default:
        return;
    }
  }
}

function checkpointData(id: string, description: string) {
  return { checkpoint_id: id, description, resumable: true, created_at: new Date().toISOString() };
}

function belongsTo(turn: TurnRow, index: number): boolean {
  const own = `${TURN_REQUEST}${index}`;
  return turn.clientRequestId === own || turn.clientRequestId.startsWith(`${own}-resume-`);
}

function turnEnd(outcome: TurnOutcome): TurnEnd {
  switch (outcome.status) {
    case 'completed':
      return { status: 'completed' };
    case 'failed':
      return { status: 'failed', code: outcome.code, message: outcome.message };
    case 'cancelled':
      return { status: 'cancelled', code: 'cancelled', message: 'the turn was cancelled' };
    case 'timed_out':
      return { status: 'timed_out', code: 'timed_out', message: outcome.message };
  }
}
