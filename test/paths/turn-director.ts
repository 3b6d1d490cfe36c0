import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AnyMachineSnapshot, EventObject, InspectionEvent } from 'xstate';
import type { TurnContext } from '../../machines/turn.machine.js';
import type { ScriptedReply, ToolExecutionResult } from '../../src/index.js';
import { BIG_TEXT, untilAborted, type Script, type Stage } from './stage.js';
import { RestLog } from './rest-log.js';
import { StepCursor } from './step-cursor.js';
import { pendingEffectOf } from './recorded-effects.js';
import type { PathStep } from './tour.js';
import { ANY_TOOL, DONE_CHILD, ERROR_CHILD, OVER_BUDGET_USAGE, resultStatusOf, startsReads, type TurnEnv } from './turn-model.js';
import type { MistakeLimitDecision } from '../../src/index.js';

type Step = PathStep<TurnEnv>;
const value = (s: { value: unknown }) => JSON.stringify(s.value);
const machineId = (s: unknown) => (s as { machine?: { id: string } } | undefined)?.machine?.id;
const effectOf = (step: Step) => pendingEffectOf(step.state.machine);
const COMMANDS = new Set(['turn.interrupt', 'turn.resolve_permission']);
const INTERRUPTS = new Set(['turn.interrupt']);
/** Why a step interrupts the turn (`turn.interrupt`'s reason): the user cancels, a time limit passes, the session stops. */
type Interruption = 'cancel' | 'timeout' | 'stop';
const interruptionOf = (event: EventObject) => (event as { reason?: Interruption }).reason ?? 'cancel';
/** The effects an interrupt aborts while the chart waits for their reply (`abortEffect`). */
const ABORTABLE = new Set(['prepareRequest', 'compact', 'consultMistakeLimit']);
/** The branches that start a run of reads ahead of their calls (RL-5), and how a step that took one is labelled. */
const PARALLEL_GUARDS = new Set(['callsReadInParallel', 'nextCallsReadInParallel']);
const STARTS_READS = ' (reads started)';
/** The step's event is the failure of an effect the interrupt aborted (see `ABORTED` in turn-model.ts). */
const isAborted = (event: EventObject) => (event as { error?: { aborted?: boolean } }).error?.aborted === true;

/**
 * Carries out one generated path of the turn chart on a real runtime. It watches the turn actor
 * through `inspect`; each time the turn comes to rest in the state a step starts from, it makes
 * that step's event happen: it arms a storage fault, issues a command, moves the charts' clock to
 * the run's deadline (the session then sends `turn.interrupt` with reason `timeout`), or leaves a
 * note the model and tools read when the runtime calls them. Nothing is sent to the chart directly.
 */
export class TurnDirector implements Script {
  private readonly cursor: StepCursor<TurnEnv>;
  private current: Step | null = null;
  private cleanup: Array<() => void> = [];
  /** Interrupts for when the call's result is being written. */
  private lateCommands: Interruption[] = [];
  /** Interrupts for when the pending effect replies: it finished unaborted, and the chart still takes them first. */
  private atReply: Interruption[] = [];
  /** Interrupts for when the sampling's world-state write is under way (held at the storage). */
  private duringWrite: Interruption[] | null = null;
  /** Lets the held world-state write go (a moment after) once the turn has taken the interrupt. */
  private releaseOnInterrupt: (() => void) | null = null;
  /** Every hold, released at the end of the path at the latest. */
  private readonly releases: Array<() => void> = [];
  private notes = 0;
  /** A time limit asked to pass before its deadline was armed: the commands after it wait for it. */
  private deadline: Promise<void> | null = null;
  private turnId = '';
  private pendingPermission: string | null = null;
  private callCounter = 0;
  readonly rests: RestLog;
  /** The events the turn took, in order, as `label` names them; an interrupt after the first is left out. */
  private readonly taken: string[] = [];
  private interrupted = false;
  stage!: Stage;

  constructor(readonly path: Step[]) {
    this.rests = new RestLog(path, () => void this.stage.session.stop());
    this.cursor = new StepCursor(path, COMMANDS);
  }

  /**
   * What differs between the events the turn took and the path's: a reply of the other kind
   * (an effect that finished where the path has it aborted, say) rests where the path says too.
   * An interrupt after the first is left out of both: the session drops most of them (a stopped
   * session takes no cancel, a run's time limit passes once), and the chart only marks them.
   */
  eventProblem(): string | null {
    const again = (step: Step) => INTERRUPTS.has(step.event.type) && (step.state.machine.context as TurnContext).interrupt !== null;
    const expected = this.path.filter((step) => !again(step)).map((step) => label(step.event) + (startsReads(step) ? STARTS_READS : ''));
    if (JSON.stringify(this.taken) === JSON.stringify(expected)) return null;
    return `took ${this.taken.join(' → ')}; the path says ${expected.join(' → ')}`;
  }

  /** Undoes what the last step armed (a fault, a broken file, a held write) once the turn has ended. */
  finish(): void {
    for (const undo of this.cleanup.splice(0)) undo();
    for (const release of this.releases.splice(0)) release();
  }

  get done(): boolean {
    return this.cursor.done;
  }

  readonly observe = (event: InspectionEvent): void => {
    if (event.type === '@xstate.snapshot' && machineId(event.snapshot) === 'turn') this.rest(event.snapshot as AnyMachineSnapshot);
    if (event.type === '@xstate.event' && event.event.type === 'xstate.init' && machineId(event.actorRef.getSnapshot()) === 'turn') {
      this.land(event.actorRef.getSnapshot() as AnyMachineSnapshot);
    }
    // The effect's reply is on its way to the turn: the interrupt reaches the turn first, in the
    // same synchronous run, so the effect finished unaborted and the chart takes both.
    if (event.type === '@xstate.event' && event.event.type.startsWith('effect.') && this.atReply.length > 0 && machineId(event.actorRef.getSnapshot()) === 'turn') {
      for (const type of this.atReply.splice(0)) this.command(type);
    }
    if (event.type !== '@xstate.microstep') return;
    const id = machineId(event.snapshot);
    const transitions = event._transitions as unknown as Array<{ target?: unknown; eventType: string; guard?: unknown }>;
    const moved = transitions.some((t) => t.target !== undefined);
    if (id === 'turn') {
      const again = this.interrupted && INTERRUPTS.has(event.event.type);
      // Which branch started reads ahead (RL-5) is part of what the turn took: the rests alone cannot tell.
      const reads = transitions.some((t) => typeof t.guard === 'string' && PARALLEL_GUARDS.has(t.guard));
      if (!again && transitions.some((t) => t.eventType !== '')) this.taken.push(label(event.event) + (reads ? STARTS_READS : ''));
      this.interrupted = ((event.snapshot as AnyMachineSnapshot).context as TurnContext).interrupt !== null;
      if (this.interrupted && this.releaseOnInterrupt) {
        this.releaseOnInterrupt();
        this.releaseOnInterrupt = null;
      }
      if (moved) this.land(event.snapshot as AnyMachineSnapshot);
    }
    if (id === 'toolCall' && moved && this.lateCommands.length > 0 && (event.snapshot as AnyMachineSnapshot).matches('writing_result')) {
      for (const type of this.lateCommands.splice(0)) this.command(type);
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
    const event = step.event as EventObject & { mail?: boolean; hold?: boolean; decision?: string; error?: { reloadRequired?: boolean } };
    if (event.mail) void this.stage.session.deliverAgentMessage({ from: 'worker-1', text: 'a note from a worker' });
    if (event.hold) this.stage.session.holdAtCheckpoint();
    switch (event.type) {
      case 'effect.done':
        if (effectOf(step) === 'awaitRelease') this.stage.session.releaseHold();
        return;
      case 'effect.failed':
        // An aborted effect fails by itself: the interrupt before it is arranged to abort it.
        if (isAborted(event)) return;
        return this.fail(effectOf(step), event.error?.reloadRequired === true);
      case 'turn.interrupt':
        return this.interrupt(step, interruptionOf(event));
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

  /**
   * When an interrupt must arrive. While a tool runs: at once, or (`isLate`) while its result is
   * written. While the sampling or the compaction is in flight the chart aborts the effect and waits
   * for its reply; the reply the path takes next says when: the aborted sampling's failure comes
   * from an interrupt during its world-state write, the aborted summary's from the summary call
   * (which waits for its signal); a reply of an effect that finished anyway, from an interrupt that
   * reaches the turn just ahead of that reply.
   */
  private interrupt(step: Step, type: Interruption): void {
    if (this.isLate(step)) return void this.lateCommands.push(type);
    const effect = effectOf(step);
    const reply = this.cursor.rest().find((s) => !INTERRUPTS.has(s.event.type));
    if (effect === null || !ABORTABLE.has(effect) || !reply?.event.type.startsWith('effect.') || effectOf(reply) !== effect) return this.command(type);
    if (!isAborted(reply.event)) return void this.atReply.push(type);
    if (effect === 'prepareRequest') return this.interruptDuringWrite(type);
    this.command(type); // the summary call and the mistake callback wait for their signal (see `modelReply`, `mistakeDecision`)
  }

  /**
   * A world-state write of the sampling is held at the storage; the interrupt arrives while it waits,
   * and the write goes on once the turn has taken it. A new file at the top of the workspace changes
   * the project listing, so this sampling has a section to write even when nothing else changed.
   */
  private interruptDuringWrite(type: Interruption): void {
    if (this.duringWrite) return void this.duringWrite.push(type);
    const commands: Interruption[] = [type];
    this.duringWrite = commands;
    writeFileSync(path.join(this.stage.workspace, `note-${++this.notes}.txt`), 'a new file');
    const held = this.stage.hold('appendMessage');
    let reached = false;
    this.releases.push(held.release);
    // The turn moved on before any write reached the gate (it left the path): let later writes through.
    this.cleanup.push(() => {
      if (!reached) held.release();
      if (this.duringWrite === commands) this.duringWrite = null;
    });
    void held.reached.then(() => {
      reached = true;
      this.duringWrite = null;
      // Not at once: a turn that did not wait for its write would end first, and the write land after turn_finished.
      this.releaseOnInterrupt = () => setImmediate(held.release);
      for (const command of commands) this.command(command);
    });
  }

  /**
   * The user cancels, a time limit passes (the clock moves to the next deadline: the run's, or in the
   * guarded course the watchdog's), or the session stops.
   */
  private command(type: Interruption): void {
    const deadline = this.deadline;
    if (deadline) return void deadline.then(() => this.command(type));
    if (type === 'cancel') void this.stage.session.cancelTurn(this.turnId);
    else if (type === 'timeout') this.expire();
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
      // The summary call the interrupt aborts: it waits for its signal.
      if (isAborted(event)) return untilAborted<ScriptedReply>(signal, { text: 'never seen' });
      if (event.type === 'effect.failed' && !event.error?.reloadRequired) return { error: 'provider' };
      return { text: event.big ? 'y'.repeat(20_000) : 'SUMMARY' };
    }
    if (event.type === 'effect.failed') {
      const kind = event.error!.kind as 'overflow' | 'provider' | 'protocol';
      return { error: kind, afterText: event.error?.semanticOutputProduced ? 'partial answer' : undefined };
    }
    // The parallel course names each call's tool; in the serial course the path's steps pick it.
    const calls = (event.output?.toolCalls ?? []) as Array<{ id: string; name: string }>;
    const names = calls.some((call) => call.name === ANY_TOOL) ? this.upcomingToolNames(calls.length) : calls.map((call) => call.name);
    // The token budget (issue 12): the call before a request the path has over the budget reports that much.
    const usage = this.budgetPassedAfter(step) ? { usage: { inputTokens: OVER_BUDGET_USAGE } } : {};
    return { text: 'answer', toolCalls: calls.map(({ id }, i) => ({ id, name: names[i]!, args: { path: `f${++this.callCounter}` } })), ...usage };
  }

  /** Whether the next request after `step` is over the token budget (its `turnTokens` say so). */
  private budgetPassedAfter(step: Step): boolean {
    const prepare = this.path.slice(this.path.indexOf(step) + 1).find((s) => effectOf(s) === 'prepareRequest');
    return ((prepare?.event as { output?: { turnTokens?: number } } | undefined)?.output?.turnTokens ?? 0) > 0;
  }

  /**
   * The agent's `onMistakeLimit` (GR-2) answers what the step says: continue, stop, or a throw; a
   * decision an interrupt reaches first waits for its signal.
   */
  mistakeDecision(signal: AbortSignal): MistakeLimitDecision | Promise<MistakeLimitDecision> {
    const event = this.current!.event as EventObject & { output?: { action?: string; message?: string } };
    if (COMMANDS.has(event.type) || isAborted(event)) return untilAborted<MistakeLimitDecision>(signal, { action: 'stop', message: 'never seen' });
    if (event.type === 'effect.failed') throw new Error('the operator console is down');
    if (event.output?.action === 'stop') return { action: 'stop', message: event.output.message ?? 'stopped' };
    return { action: 'continue', guidance: 'try something else' };
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

  /**
   * A tool answers as its call's steps say, found by the call's id (the director gives each call the
   * traversal's id): the steps while its tool runs (after its approval, if it asked). A call an
   * interrupt reaches while its tool runs waits for its signal, unless the interrupt comes while its
   * result is written; one that ends cancelled gives up by itself. A read started ahead of its call
   * (RL-5) is answered the same way, however early it starts; one whose call the path never reaches
   * waits for its signal: skipping the call, or ending the turn, must abort it.
   */
  toolResult(_name: string, signal: AbortSignal, toolCallId: string): ToolExecutionResult | Promise<ToolExecutionResult> {
    const steps = this.path.filter((s) => s.state.machine.matches({ running_tools: 'tool_call' }) && currentCallId(s) === toolCallId);
    // While the tool runs: from the start, or from the approval; then, once an interrupt reached it, until it ends.
    const from = steps.some((s) => s.state.env.child === 'approved') ? 'approved' : 'fresh';
    const running = steps.filter((s) => [from, 'cancel', 'stop'].includes(s.state.env.child));
    const finish = running.find((s) => s.event.type === DONE_CHILD);
    const interrupted = running.some((s) => INTERRUPTS.has(s.event.type));
    if (!finish || (interrupted && terminationOf(finish.event) !== null)) return untilAborted<ToolExecutionResult>(signal, { status: 'cancelled', content: 'stopped' });
    if (terminationOf(finish.event) === 'cancelled') return { status: 'cancelled', content: 'the tool gave up' };
    if (resultStatusOf(finish.event) === 'failed') return { status: 'failed', content: 'the read failed' };
    return { status: 'succeeded', content: this.prepareOverAfter(finish) ? BIG_TEXT : 'contents' };
  }

  /** Whether the next model call's request after `step` must be over the line, so a result before it must be big. */
  private prepareOverAfter(step: Step): boolean {
    const prepare = this.path.slice(this.path.indexOf(step)).find((s) => effectOf(s) === 'prepareRequest');
    return (prepare?.event as { output?: { overLine?: boolean } } | undefined)?.output?.overLine === true;
  }

  /** The user's message: big when the very first request must already be over the line. */
  userText(): string {
    const prepare = this.path.find((s) => effectOf(s) === 'prepareRequest');
    return (prepare?.event as { output?: { overLine?: boolean } } | undefined)?.output?.overLine === true ? BIG_TEXT : 'please do the task';
  }
}

/** An event as a path step names it: an interrupt with its reason (and limit), the failure of an effect an interrupt aborted marked so. */
function label(event: EventObject): string {
  if (event.type === 'turn.interrupt') {
    const { reason, limit } = event as { reason?: string; limit?: string };
    return `${event.type} (${[reason, limit].filter(Boolean).join(', ')})`;
  }
  if (event.type !== 'effect.failed') return event.type;
  const error = (event as { error?: unknown }).error;
  const aborted = isAborted(event) || (error instanceof Error && /\baborted\b/.test(error.message));
  return aborted ? 'effect.failed (aborted)' : event.type;
}

/** The id of the call a step's turn is running (the traversal's, which the director gives the runtime's call too). */
function currentCallId(step: Step): string | undefined {
  const context = step.state.machine.context as TurnContext;
  return context.response?.toolCalls[context.toolIndex]?.id;
}

function terminationOf(event: EventObject): 'cancelled' | 'failed' | null {
  const termination = (event as { output?: { termination?: { kind: 'cancelled' | 'failed' } | null } }).output?.termination;
  return termination?.kind ?? null;
}
