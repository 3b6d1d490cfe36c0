import type { AnyMachineSnapshot, EventObject, InspectionEvent } from 'xstate';
import type { CommandReply, SessionContext } from '../../machines/session.machine.js';
import type { ScriptedReply, ToolExecutionResult } from '../../src/index.js';
import { DONE_TURN, RUN_TIMEOUT, UNKNOWN_TURN, type SessionEnv } from './session-model.js';
import type { Script, Stage } from './stage.js';
import { pendingEffectOf } from './recorded-effects.js';
import { RestLog, type RestProjection } from './rest-log.js';
import type { PathStep } from './tour.js';

type Step = PathStep<SessionEnv>;
type Command = EventObject & { turnId?: string; toolCallId?: string; clientRequestId?: string };
const value = (s: { value: unknown }) => JSON.stringify(s.value);
const machineId = (s: unknown) => (s as { machine?: { id: string } } | undefined)?.machine?.id;
const isCommand = (e: EventObject) => e.type.startsWith('session.') && e.type !== 'session.require_reload';
const contextOf = (s: { context?: unknown }) => s.context as SessionContext;
/** A microstep takes the event itself, not an eventless transition that follows it in the same macrostep. */
const takes = (event: InspectionEvent & { type: '@xstate.microstep' }, type: string) =>
  (event._transitions as unknown as Array<{ eventType: string }>).some((t) => t.eventType === type);
/** Where the session rests, and how many turns wait in its queue: both must be as the path says. */
const restWithQueue: RestProjection = (s) => JSON.stringify([s.value, contextOf(s).queue.length]);

/**
 * Carries out one generated path of the session chart. Commands are issued through the session
 * handle, one at a time, each after the chart has taken the step before it; turn and effect events
 * are arranged (the held model call is answered so the turn asks, ends or needs a reload; a fault
 * is armed, the clock is moved to the run's deadline) and then awaited, as the chart takes them,
 * through `inspect`. Queued turns are named by their place in the queue, which the rests check.
 */
export class SessionDirector implements Script {
  private next = 0;
  private awaiting: Step | null = null;
  private readonly replies: ScriptedReply[] = [];
  private heldCall: ((reply: ScriptedReply) => void) | null = null;
  /** What to undo when a step is taken (a fault it armed, a reply it left unused). */
  private readonly undos = new Map<number, Array<() => void>>();
  private checkpointId = 'k_unknown';
  private latest: SessionContext | null = null;
  private readonly armed = new Set<number>();
  /** A step was taken in the macrostep under way: the next one comes when it is over. */
  private stepTaken = false;
  private finished: () => void = () => undefined;
  /** Resolves when the chart has taken every step of the path. */
  readonly ended = new Promise<void>((resolve) => (this.finished = resolve));
  /** Every command's answer, so the test can check each came back typed. */
  readonly answers: Array<Promise<unknown>> = [];
  readonly rests: RestLog;
  /** Turns whose terminal status could not be stored; the runtime writes it before the next turn (RT-26). */
  readonly unfinishedWrites = new Set<string>();
  /** Queued turns the path cancelled before they started (a cancel, or a turn that replaced them). */
  readonly cancelledWhileQueued = new Set<string>();
  /** Answers to `startTurn` that differ from the chart's reply in the path. */
  readonly wrongAnswers: string[] = [];
  stage!: Stage;

  constructor(readonly path: Step[]) {
    // Off the path: let a held model call end and stop the session, so the test can report it.
    this.rests = new RestLog(
      path,
      () => {
        this.reply({ text: 'off the path' });
        void this.stage.session.stop();
        this.finished();
      },
      restWithQueue,
    );
    this.rests.record({ value: 'idle', context: { queue: [] } });
  }

  get done(): boolean {
    return this.next === this.path.length;
  }

  start(): void {
    this.advance();
  }

  readonly observe = (event: InspectionEvent): void => {
    if (event.type === '@xstate.snapshot' && machineId(event.snapshot) === 'session') return this.settled(event.snapshot as AnyMachineSnapshot);
    if (event.type !== '@xstate.microstep' || machineId(event.snapshot) !== 'session') return;
    // Mid-step the actor still reports its previous snapshot; the microstep's is the current one.
    this.latest = (event.snapshot as AnyMachineSnapshot).context as SessionContext;
    if (this.awaiting && takes(event, this.awaiting.event.type)) this.taken(event.event);
  };

  /** The chart took the awaited step (the macrostep may go on with eventless transitions). */
  private taken(event: EventObject): void {
    const step = this.awaiting!;
    for (const undo of this.undos.get(this.next) ?? []) undo();
    if (step.event.type === 'effect.failed' && this.latest?.lastOutcome && pendingEffectOf(step.state.machine) === 'finishTurn') {
      this.unfinishedWrites.add(this.latest.lastOutcome.turnId);
    }
    const output = (event as { output?: { compactionId?: string } }).output;
    if (output?.compactionId) this.checkpointId = output.compactionId;
    this.awaiting = null;
    this.next += 1;
    this.stage.checkStep(`after ${event.type}`);
    // The next effect's fault must be armed before the effect starts, as the macrostep ends.
    this.armEffect();
    this.stepTaken = true;
  }

  /**
   * The macrostep is over: the session rests. The next step is issued only now, so it names the
   * turns (the running one, the queued ones) as they are once the step is complete.
   */
  private settled(snapshot: AnyMachineSnapshot): void {
    this.rests.record(snapshot);
    this.latest = snapshot.context as SessionContext;
    if (!this.stepTaken) return;
    this.stepTaken = false;
    this.advance();
  }

  /**
   * An effect starts as the chart enters its state, possibly before the commands that follow in
   * the path: the effect's fault or reply is arranged now, not when its step comes up.
   */
  private armEffect(): void {
    const index = this.path.findIndex((step, i) => i >= this.next && !isCommand(step.event));
    const step = this.path[index];
    const here = this.path[this.next];
    if (!step || !here || !step.event.type.startsWith('effect.') || this.armed.has(index)) return;
    if (value(step.state.machine) !== value(here.state.machine)) return;
    this.armed.add(index);
    this.arrange(step, index);
  }

  private advance(): void {
    while (!this.awaiting && this.next < this.path.length) {
      const step = this.path[this.next]!;
      this.awaiting = step;
      if (isCommand(step.event)) this.issue(step);
      else if (!this.armed.has(this.next)) this.arrange(step, this.next);
    }
    if (this.done) this.finished();
  }

  private issue(step: Step): void {
    const { session } = this.stage;
    const event = step.event as Command;
    const context = this.latest ?? (session.actor.getSnapshot().context as SessionContext);
    const turnId = this.realTurnId(step, context);
    this.noteDroppedFromQueue(step, context);
    switch (event.type) {
      case 'session.start_turn': {
        const started = session.startTurn({ clientRequestId: event.clientRequestId, input: [{ type: 'text', text: 'do the task' }] });
        void started.then((answer) => this.checkStartAnswer(answer, contextOf(step.next.machine).reply?.result));
        return this.answer(started);
      }
      case 'session.cancel_turn':
        return this.answer(session.cancelTurn(turnId));
      case 'session.resolve_permission': {
        const pending = context.pendingPermission;
        const toolCallId = event.toolCallId === 'nope' ? 'nope' : pending?.toolCallId;
        return this.answer(session.resolvePermission({ turnId, toolCallId, decision: 'deny' }));
      }
      case 'session.compact':
        return this.answer(session.compactConversation());
      case 'session.rewind': {
        const succeeds = this.path.slice(this.next + 1).find((step) => !isCommand(step.event))?.event.type === 'effect.done';
        return this.answer(session.rewindConversation(succeeds ? this.checkpointId : 'k_unknown'));
      }
      case 'session.reload':
        return this.answer(session.reload());
      case 'session.switch_agent':
        return this.answer(session.switchAgent(session.agent === 'default' ? 'other' : 'default'));
      case 'session.stop':
        return this.answer(session.stop());
    }
  }

  private answer(reply: Promise<unknown>): void {
    this.answers.push(reply);
  }

  /** The runtime's id of the turn a command names: unknown, a queued one (by its place), or the running one. */
  private realTurnId(step: Step, context: SessionContext): string {
    const named = (step.event as Command).turnId;
    if (named === UNKNOWN_TURN) return UNKNOWN_TURN;
    const place = contextOf(step.state.machine).queue.findIndex((q) => q.turnId === named);
    if (place >= 0) return context.queue[place]?.turnId ?? UNKNOWN_TURN;
    return context.activeTurn?.turnId ?? UNKNOWN_TURN;
  }

  /** Queued turns the chart drops with this command without starting them end `cancelled`. */
  private noteDroppedFromQueue(step: Step, context: SessionContext): void {
    const after = contextOf(step.next.machine);
    const kept = new Set([...after.queue.map((q) => q.turnId), after.activeTurn?.turnId]);
    contextOf(step.state.machine).queue.forEach((q, place) => {
      const real = context.queue[place]?.turnId;
      if (!kept.has(q.turnId) && real) this.cancelledWhileQueued.add(real);
    });
  }

  /** A turn is accepted, queued or refused as the chart's reply in the path says. */
  private checkStartAnswer(answer: unknown, expected: CommandReply | undefined): void {
    const shape = (a: unknown) => {
      const r = a as { ok?: boolean; queued?: boolean; error?: { code?: string } } | undefined;
      return JSON.stringify(r?.ok ? { ok: true, queued: r.queued === true } : { ok: r?.ok, code: r?.error?.code });
    };
    if (shape(answer) !== shape(expected)) this.wrongAnswers.push(`startTurn answered ${JSON.stringify(answer)}; the chart replies ${JSON.stringify(expected)}`);
  }

  /** Makes the runtime produce the turn or effect event this step waits for. */
  private arrange(step: Step, index: number): void {
    const { storage } = this.stage;
    const undo = (fn: () => void) => this.undos.set(index, [...(this.undos.get(index) ?? []), fn]);
    // A reply for a call this step may or may not make (a compaction with nothing to compact makes none).
    const replyOnce = (reply: ScriptedReply) => {
      this.reply(reply);
      undo(() => void this.replies.splice(0));
    };
    const effect = pendingEffectOf(step.state.machine);
    switch (step.event.type) {
      case 'turn.permission_requested':
        return this.reply({ text: 'writing', toolCalls: [{ name: 'write_file', args: { path: 'out.txt' } }] });
      case DONE_TURN:
        if (step.state.env.turn === 'working') this.reply({ text: 'finished' });
        return;
      case RUN_TIMEOUT:
        // The clock moves to the run's deadline (once it is armed, if the turn has only just started).
        return void this.stage.clock.expire();
      case 'session.require_reload':
        // An overflow makes the turn compact; the checkpoint is stored but cannot be read back.
        storage.failWhen('listMessages', () => true);
        undo(() => storage.heal('listMessages'));
        this.reply({ error: 'overflow' });
        return this.reply({ text: 'SUMMARY' });
      case 'effect.failed':
        if (effect === 'finishTurn') return storage.failNext('endTurn');
        if (effect === 'switchAgent') return storage.failNext('switchAgent');
        if (effect === 'closeSession') return storage.failNext('releaseSession');
        if (effect === 'reloadConversation') {
          storage.failWhen('listMessages', () => true);
          undo(() => storage.heal('listMessages'));
        }
        if (effect === 'compact') replyOnce({ error: 'provider' });
        return;
      case 'effect.done':
        if (effect === 'compact') replyOnce({ text: 'SUMMARY' });
        return;
    }
  }

  private reply(reply: ScriptedReply): void {
    const held = this.heldCall;
    this.heldCall = null;
    if (held) held(reply);
    else this.replies.push(reply);
  }

  modelReply(signal: AbortSignal): ScriptedReply | Promise<ScriptedReply> {
    const ready = this.replies.shift();
    if (ready) return ready;
    return new Promise<ScriptedReply>((resolve) => {
      const take = (reply: ScriptedReply) => {
        signal.removeEventListener('abort', onAbort);
        resolve(reply);
      };
      // A cancelled call gives up its place, so the next reply goes to the next call.
      const onAbort = () => {
        if (this.heldCall === take) this.heldCall = null;
        resolve({ text: 'aborted' });
      };
      this.heldCall = take;
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  toolResult(): ToolExecutionResult {
    return { status: 'succeeded', content: 'written' };
  }
}
