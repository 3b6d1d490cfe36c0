import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { AnyMachineSnapshot, EventObject, InspectionEvent } from 'xstate';
import type { TurnContext } from '../../machines/turn.machine.js';
import type { ScriptedReply, ToolExecutionResult } from '../../src/index.js';
import { BIG_TEXT, untilAborted, type Script, type Stage } from './stage.js';
import { RestLog } from './rest-log.js';
import { StepCursor } from './step-cursor.js';
import { pendingEffectOf } from './recorded-effects.js';
import type { PathStep } from './tour.js';
import { DONE_CHILD, ERROR_CHILD, type TurnEnv } from './turn-model.js';

type Step = PathStep<TurnEnv>;
const value = (s: { value: unknown }) => JSON.stringify(s.value);
const machineId = (s: unknown) => (s as { machine?: { id: string } } | undefined)?.machine?.id;
const effectOf = (step: Step) => pendingEffectOf(step.state.machine);
const COMMANDS = new Set(['turn.cancel', 'turn.timeout', 'turn.stop', 'turn.resolve_permission']);
type Interruption = 'turn.cancel' | 'turn.timeout' | 'turn.stop';

/**
 * Carries out one generated path of the turn chart on a real runtime. It watches the turn actor
 * through `inspect`; each time the turn comes to rest in the state a step starts from, it makes
 * that step's event happen: it arms a storage fault, issues a command, moves the charts' clock to
 * the run's deadline (the session then sends `turn.timeout`), or leaves a note the model and tools
 * read when the runtime calls them. Nothing is sent to the chart directly.
 */
export class TurnDirector implements Script {
  private readonly cursor: StepCursor<TurnEnv>;
  private current: Step | null = null;
  private cleanup: Array<() => void> = [];
  private lateCommand: Interruption | null = null;
  /** A time limit asked to pass before its deadline was armed: the commands after it wait for it. */
  private deadline: Promise<void> | null = null;
  private turnId = '';
  private pendingPermission: string | null = null;
  private callCounter = 0;
  readonly rests: RestLog;
  stage!: Stage;

  constructor(readonly path: Step[]) {
    this.rests = new RestLog(path, () => void this.stage.session.stop());
    this.cursor = new StepCursor(path, COMMANDS);
  }

  /** Undoes what the last step armed (a fault, a broken file) once the turn has ended. */
  finish(): void {
    for (const undo of this.cleanup.splice(0)) undo();
  }

  get done(): boolean {
    return this.cursor.done;
  }

  readonly observe = (event: InspectionEvent): void => {
    if (event.type === '@xstate.snapshot' && machineId(event.snapshot) === 'turn') this.rest(event.snapshot as AnyMachineSnapshot);
    if (event.type === '@xstate.event' && event.event.type === 'xstate.init' && machineId(event.actorRef.getSnapshot()) === 'turn') {
      this.land(event.actorRef.getSnapshot() as AnyMachineSnapshot);
    }
    if (event.type !== '@xstate.microstep') return;
    const id = machineId(event.snapshot);
    const moved = (event._transitions as unknown as Array<{ target?: unknown }>).some((t) => t.target !== undefined);
    if (id === 'turn' && moved) this.land(event.snapshot as AnyMachineSnapshot);
    if (id === 'toolCall' && moved && this.lateCommand && (event.snapshot as AnyMachineSnapshot).matches('writing_result')) {
      this.command(this.lateCommand);
      this.lateCommand = null;
    }
  };

  private rest(snapshot: AnyMachineSnapshot): void {
    this.rests.record(snapshot);
    this.stage.checkStep(`at ${value(snapshot)}`);
  }

  /** The turn entered a state: if it is where the next step starts, make the step's event happen. */
  private land(snapshot: AnyMachineSnapshot): void {
    if (!this.cursor.startsAt(snapshot)) return;
    for (const undo of this.cleanup.splice(0)) undo();
    const context = snapshot.context as TurnContext;
    this.turnId = context.turnId;
    this.pendingPermission = context.pendingPermission;
    for (const step of this.cursor.take()) {
      this.current = step;
      this.apply(step);
    }
  }

  private apply(step: Step): void {
    const event = step.event as EventObject & { mail?: boolean; decision?: string; error?: { reloadRequired?: boolean } };
    if (event.mail) void this.stage.session.deliverAgentMessage({ from: 'worker-1', text: 'a note from a worker' });
    switch (event.type) {
      case 'effect.failed':
        return this.fail(effectOf(step), event.error?.reloadRequired === true);
      case 'turn.cancel':
      case 'turn.timeout':
      case 'turn.stop':
        if (this.isLate(step)) this.lateCommand = event.type;
        else this.command(event.type);
        return;
      case 'turn.resolve_permission': {
        // The session records the request when the turn's step is over; answer right after that.
        const answer = { turnId: this.turnId, toolCallId: this.pendingPermission, decision: event.decision };
        queueMicrotask(() => void this.stage.session.resolvePermission(answer));
        return;
      }
      case DONE_CHILD:
        // A call that ran and still ends failed: its result write fails.
        if (terminationOf(event) === 'failed' && (step.state.env.child === 'fresh' || step.state.env.child === 'approved')) {
          this.stage.storage.failNext('appendMessage');
        }
        return;
    }
  }

  /** The user cancels, the run passes its time limit (the clock moves to the deadline), or the session stops. */
  private command(type: Interruption): void {
    const deadline = this.deadline;
    if (deadline) return void deadline.then(() => this.command(type));
    if (type === 'turn.cancel') void this.stage.session.cancelTurn(this.turnId);
    else if (type === 'turn.timeout') this.expire();
    else void this.stage.session.stop();
  }

  private expire(): void {
    const passing = this.stage.clock.expire();
    if (!passing) return;
    this.deadline = passing.then(() => {
      this.deadline = null;
    });
  }

  /** A cancel, time limit or stop the path wants to arrive while the call's result is being written. */
  private isLate(step: Step): boolean {
    const following = this.cursor.following;
    return step.state.machine.matches({ running_tools: 'tool_call' }) && following?.event.type === DONE_CHILD && terminationOf(following.event) === null;
  }

  private fail(effect: string | null, reloadRequired: boolean): void {
    const { storage, workspace } = this.stage;
    switch (effect) {
      case 'beginTurn':
        return storage.failNext('beginTurn');
      case 'drainMailbox':
      case 'writeAssistant':
      case 'skipToolCalls':
        return storage.failNext('appendMessage');
      case 'prepareRequest': {
        // An AGENTS.md that is not a regular file fails the project-instructions section.
        const file = path.join(workspace, 'AGENTS.md');
        mkdirSync(file);
        this.cleanup.push(() => rmSync(file, { recursive: true, force: true }));
        return;
      }
      case 'compact':
        if (reloadRequired) {
          // The checkpoint is stored but the compacted conversation cannot be read back.
          storage.failWhen('listMessages', () => true);
          this.cleanup.push(() => storage.heal('listMessages'));
        }
        return;
    }
  }

  modelReply(signal: AbortSignal): ScriptedReply | Promise<ScriptedReply> {
    const step = this.current!;
    const event = step.event as EventObject & { output?: { toolCalls?: unknown[] }; error?: { kind?: string; semanticOutputProduced?: boolean; reloadRequired?: boolean }; big?: boolean };
    if (COMMANDS.has(event.type)) return untilAborted<ScriptedReply>(signal, { text: 'never seen' });
    if (effectOf(step) === 'compact') {
      if (event.type === 'effect.failed' && !event.error?.reloadRequired) return { error: 'provider' };
      return { text: event.big ? 'y'.repeat(20_000) : 'SUMMARY' };
    }
    if (event.type === 'effect.failed') {
      const kind = event.error!.kind as 'overflow' | 'provider' | 'protocol';
      return { error: kind, afterText: event.error?.semanticOutputProduced ? 'partial answer' : undefined };
    }
    const names = this.upcomingToolNames(event.output?.toolCalls?.length ?? 0);
    return { text: 'answer', toolCalls: names.map((name) => ({ name, args: { path: `f${++this.callCounter}` } })) };
  }

  /** The tools the calls of this response must name, so the calls behave as the steps after it say. */
  private upcomingToolNames(count: number): string[] {
    const names: string[] = [];
    for (const step of this.cursor.rest()) {
      if (effectOf(step) === 'callModel' || names.length === count) break;
      if (!step.state.machine.matches({ running_tools: 'tool_call' }) || step.state.env.child !== 'fresh') continue;
      names.push(step.event.type === 'tool.permission_requested' ? 'write_file' : step.event.type === ERROR_CHILD ? 'exploding' : 'read_file');
    }
    while (names.length < count) names.push('read_file');
    return names;
  }

  toolResult(_name: string, signal: AbortSignal): ToolExecutionResult | Promise<ToolExecutionResult> {
    const step = this.current!;
    if (COMMANDS.has(step.event.type) && !this.lateCommand) return untilAborted<ToolExecutionResult>(signal, { status: 'cancelled', content: 'stopped' });
    if (step.event.type === DONE_CHILD && terminationOf(step.event) === 'cancelled') return { status: 'cancelled', content: 'the tool gave up' };
    return { status: 'succeeded', content: this.nextPrepareOver() ? BIG_TEXT : 'contents' };
  }

  /** Whether the next model call's request must be over the line, so this result must be big. */
  private nextPrepareOver(): boolean {
    const prepare = this.cursor.rest().find((s) => effectOf(s) === 'prepareRequest');
    return (prepare?.event as { output?: { overLine?: boolean } } | undefined)?.output?.overLine === true;
  }

  /** The user's message: big when the very first request must already be over the line. */
  userText(): string {
    const prepare = this.path.find((s) => effectOf(s) === 'prepareRequest');
    return (prepare?.event as { output?: { overLine?: boolean } } | undefined)?.output?.overLine === true ? BIG_TEXT : 'please do the task';
  }
}

function terminationOf(event: EventObject): 'cancelled' | 'failed' | null {
  const termination = (event as { output?: { termination?: { kind: 'cancelled' | 'failed' } | null } }).output?.termination;
  return termination?.kind ?? null;
}
