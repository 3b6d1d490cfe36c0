import { randomUUID } from 'node:crypto';
import type { AnyMachineSnapshot, EventObject, InspectionEvent } from 'xstate';
import { z } from 'zod';
import type { TaskContext, TaskOutput } from '../../machines/task.machine.js';
import type { AdmissionDecision } from '../../machines/task.effects.js';
import { KyselyTaskStorage } from '../../storage/kysely-task-storage.js';
import { sqliteDatabase } from '../../storage/sqlite.js';
import { KyselySessionStorage } from '../../storage/kysely-storage.js';
import type { SessionStorage } from '../../storage/session-storage.js';
import { createRuntime, defineTool, ModelCallError, withFaults, type FaultyStorage, type ModelPort, type ScriptedReply, type SessionHandle } from '../../src/index.js';
import { DEFAULT_CAPABILITIES, replay } from '../../src/model/scripted-model.js';
import { TaskJournal } from '../../src/tasks/task-journal.js';
import { TaskRunner } from '../../src/tasks/task-runner.js';
import { taskSpecSchema } from '../../src/protocol/task-spec.js';
import { DeadlineClock } from './deadline-clock.js';
import { ABORT_CLEANUP, ABORT_CLEANUP_MS, ADMIT_DONE, ADMIT_ERROR, MAX_DURATION, MAX_DURATION_MS, TASK_TURNS, type TaskEnv, type TaskScenario } from './task-model.js';
import type { PathStep } from './tour.js';

type Step = PathStep<TaskEnv>;

/** How long one path may take before it is reported stuck. */
const PATH_DEADLINE_MS = 10_000;

/** The part of a snapshot a step names: where the chart rests, and what it counts. */
function restKey(snapshot: AnyMachineSnapshot): string {
  const c = snapshot.context as TaskContext;
  return JSON.stringify([snapshot.value, snapshot.status, c.pauseRequested, c.turnsDone]);
}

/**
 * Carries out one generated path of the task chart on a real task runner: a real runtime on SQLite
 * `:memory:`, the real session driver and journal, task storage on the same database. Each time
 * the task comes to rest where the next step starts, it makes that step's event happen: it issues a
 * command, answers the admission gate or the model (a final answer, a failure, a tool call that
 * brings the turn back to its checkpoint), moves the charts' clock to a timer, or — one step ahead,
 * since the session acts at once — fails the storage read a turn starts with, or holds the write
 * that ends a cancelled turn. Nothing is sent to the chart directly.
 */
export class TaskDirector {
  private index = 0;
  private runner!: TaskRunner;
  private readonly replies: ScriptedReply[] = [];
  private replyWaiter: (() => void) | null = null;
  private modelWaits: (() => void) | null = null;
  private admission: { resolve: (d: AdmissionDecision) => void; reject: (e: Error) => void } | null = null;
  private admissionAnswer: (() => void) | null = null;
  private scheduled = false;
  readonly problems: string[] = [];
  readonly clock = new DeadlineClock();
  /** The task's agent session: a path closes it, or cancels its held turn, as something outside the task would. */
  handle!: SessionHandle;

  constructor(
    private readonly path: Step[],
    private readonly sessions: FaultyStorage,
    private readonly endTurn: EndTurnGate,
  ) {}

  /** The model: each call takes the next reply the path gives, waiting for it; a cancel ends the wait. */
  readonly model: ModelPort = {
    capabilities: DEFAULT_CAPABILITIES,
    stream: (_request, { signal }) => {
      const next = () => this.nextReply(signal);
      return (async function* () {
        yield* replay(await next());
      })();
    },
  };

  readonly admit = (): Promise<AdmissionDecision> =>
    new Promise((resolve, reject) => {
      this.admission = { resolve, reject };
      this.admissionAnswer?.();
    });

  start(runner: TaskRunner): void {
    this.runner = runner;
    this.prepare(this.path[0]);
    runner.start();
    this.schedule();
  }

  readonly observe = (event: InspectionEvent): void => {
    if (event.type === '@xstate.snapshot' && (event.snapshot as { machine?: { id: string } }).machine?.id === 'task') this.schedule();
  };

  get done(): boolean {
    return this.index === this.path.length;
  }

  /** Lets held writes go once the path is over. */
  finish(): void {
    this.endTurn.release();
  }

  /** Rests are handled a microtask later: a command issued from a rest must not run inside the step that made it. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.advance();
    });
  }

  private advance(): void {
    while (this.index < this.path.length) {
      const step = this.path[this.index]!;
      const snapshot = this.runner.actor.getSnapshot() as unknown as AnyMachineSnapshot;
      const here = restKey(snapshot);
      // An event that follows by itself (an abort with nothing to cancel is over at once) may be taken before the director looks.
      if (here === restKey(step.next.machine) && here !== restKey(step.state.machine) && !step.event.type.startsWith('task.')) {
        this.index += 1;
        continue;
      }
      if (here !== restKey(step.state.machine)) return;
      this.index += 1;
      this.prepare(this.path[this.index]);
      const synchronous = this.apply(step);
      if (!synchronous) return;
    }
  }

  /** What must be arranged before the step ahead of `next` happens, because the session acts at once. */
  private prepare(next: Step | undefined): void {
    if (!next) return;
    // A turn that fails to start: the storage read it starts with fails (a paused task's session fails by closing, as it happens).
    if (next.event.type === 'session.failed' && !isPaused(next.state.machine)) this.sessions.failNext('listTurns');
    if (next.event.type === ABORT_CLEANUP) this.endTurn.hold();
  }

  /** Makes the step's event happen; true when it has happened already (a command), false when it follows later. */
  private apply(step: Step): boolean {
    const event = step.event as EventObject & { output?: AdmissionDecision; end?: { status: string } };
    if ((event as { duringModelCall?: boolean }).duringModelCall) {
      // The pause reaches the turn while its model call waits for an answer.
      this.whenModelWaits(() => this.runner.command('pause'));
      return false;
    }
    switch (event.type) {
      case 'task.pause':
      case 'task.resume':
      case 'task.abort':
        this.runner.command(event.type.slice(5) as 'pause' | 'resume' | 'abort');
        return true;
      case ADMIT_DONE:
        this.answerAdmission((a) => a.resolve(event.output!));
        return false;
      case ADMIT_ERROR:
        this.answerAdmission((a) => a.reject(new Error('gate down')));
        return false;
      case 'session.turn_finished':
        if (isPaused(step.state.machine)) {
          // The held turn is cancelled from outside the task, through its session.
          const live = this.handle.snapshot().runtime;
          if (live.kind === 'running') void this.handle.cancelTurn(live.turnId);
          return false;
        }
        this.reply(event.end?.status === 'completed' ? { text: 'done' } : { error: 'provider', message: 'provider down' });
        return false;
      case 'session.failed':
        // The session closes under the paused task; a running one's failure was arranged ahead.
        if (isPaused(step.state.machine)) void this.handle.close();
        return false;
      case 'session.held':
        // A tool call brings the turn back to its checkpoint, where the hold stops it.
        this.reply({ text: 'a step', toolCalls: [{ name: 'noop', args: {} }] });
        return false;
      case MAX_DURATION:
      case ABORT_CLEANUP:
        void this.clock.expire();
        return false;
      default:
        // session.failed and session.aborted happen by themselves (arranged ahead, or the abort's own course).
        return false;
    }
  }

  private answerAdmission(answer: (a: NonNullable<TaskDirector['admission']>) => void): void {
    if (this.admission) return answer(this.admission);
    this.admissionAnswer = () => answer(this.admission!);
  }

  private reply(reply: ScriptedReply): void {
    this.replies.push(reply);
    this.replyWaiter?.();
  }

  /** Runs `then` once a model call is waiting for its answer (at once if one is). */
  private whenModelWaits(then: () => void): void {
    if (this.replyWaiter) return then();
    this.modelWaits = then;
  }

  private nextReply(signal: AbortSignal): Promise<ScriptedReply> {
    return new Promise((resolve, reject) => {
      const take = () => {
        if (this.replies.length === 0) return false;
        this.replyWaiter = null;
        resolve(this.replies.shift()!);
        return true;
      };
      if (take()) return;
      this.replyWaiter = () => void take();
      const waits = this.modelWaits;
      this.modelWaits = null;
      waits?.();
      signal.addEventListener('abort', () => reject(new ModelCallError('provider', 'model call aborted')), { once: true });
    });
  }
}

const isPaused = (snapshot: AnyMachineSnapshot) => snapshot.matches({ active: { live: 'paused' } });

/** Holds the write that ends a turn while armed: a cancelled turn then cannot end, and the abort's cleanup outlasts its bound. */
class EndTurnGate {
  private held: Promise<void> | null = null;
  private open: (() => void) | null = null;

  hold(): void {
    this.held ??= new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.open?.();
    this.held = null;
  }

  wrap(inner: SessionStorage): SessionStorage {
    const endTurn = inner.endTurn.bind(inner);
    return Object.assign(Object.create(inner) as SessionStorage, {
      endTurn: async (...args: Parameters<SessionStorage['endTurn']>) => {
        if (this.held) await this.held;
        return endTurn(...args);
      },
    });
  }
}

/** Drives one generated task path through a real runner; returns what went wrong, if anything. */
export async function driveTaskPath(path: Step[], scenario: TaskScenario, observe: (event: InspectionEvent) => void): Promise<string[]> {
  const db = sqliteDatabase({ filename: ':memory:' });
  const tasks = new KyselyTaskStorage(db, { dialect: 'sqlite' });
  await tasks.migrate();
  const endTurn = new EndTurnGate();
  const sessions = withFaults(endTurn.wrap(new KyselySessionStorage(db, { dialect: 'sqlite' })));
  const director = new TaskDirector(path, sessions, endTurn);
  const noop = defineTool({ name: 'noop', description: 'does nothing', effect: 'read', input: z.object({}), execute: () => ({ status: 'succeeded', content: 'ok' }) });
  const runtime = await createRuntime({ storage: sessions, model: director.model, tools: [noop], warn: () => undefined });
  try {
    const now = Date.now();
    const spec = taskSpecSchema.parse({ taskId: 'task', prompts: Array.from({ length: TASK_TURNS }, (_, i) => `prompt ${i}`), maxDurationMs: MAX_DURATION_MS });
    await tasks.createTask('task', spec, now);
    const handle = await runtime.createSession({ permissionMode: 'auto' });
    director.handle = handle;
    await tasks.claimTask('task', handle.id, now);
    if (scenario.startState !== 'PENDING') await tasks.appendTaskEvent('task', { messageId: randomUUID(), eventType: 'state_changed', data: {}, createdAtMs: now }, { state: scenario.startState, startedAtMs: now });
    const journal = new TaskJournal('task', tasks, async () => undefined, { sessionId: handle.id, token: handle.fence }, Date.now, () => undefined);
    const runner = new TaskRunner({
      task: (await tasks.getTask('task'))!,
      handle,
      sessions,
      tasks,
      journal,
      admit: director.admit,
      now: Date.now,
      newId: randomUUID,
      warn: () => undefined,
      clock: director.clock,
      abortCleanupMs: ABORT_CLEANUP_MS,
      inspect: (event) => {
        observe(event);
        director.observe(event);
      },
    });
    director.start(runner);
    const output = await Promise.race([runner.done, new Promise<null>((resolve) => setTimeout(() => resolve(null), PATH_DEADLINE_MS))]);
    director.finish();
    await journal.durable();
    return checkEnd(path, director, output);
  } finally {
    director.finish();
    await runtime.shutdown();
  }
}

function checkEnd(path: Step[], director: TaskDirector, output: TaskOutput | null): string[] {
  const problems = [...director.problems];
  if (!director.done) problems.push('the path has steps the runner never took');
  const expected = (path.at(-1)!.next.machine.context as TaskContext).state;
  if (!output) problems.push(`the task did not end (the path ends ${expected})`);
  else if (output.state !== expected) problems.push(`the task ended ${output.state}; the path ends ${expected}`);
  return problems;
}
