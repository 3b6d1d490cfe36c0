import type { AnyMachineSnapshot, EventObject, InspectionEvent } from 'xstate';
import type { SessionContext } from '../../machines/session.machine.js';
import type { ScriptedReply, ToolExecutionResult } from '../../src/index.js';
import { DONE_TURN, UNKNOWN_TURN, type SessionEnv } from './session-model.js';
import type { Script, Stage } from './stage.js';
import { pendingEffectOf } from './recorded-effects.js';
import { RestLog } from './rest-log.js';
import type { PathStep } from './tour.js';

type Step = PathStep<SessionEnv>;
type Command = EventObject & { turnId?: string; toolCallId?: string; clientRequestId?: string };
const value = (s: { value: unknown }) => JSON.stringify(s.value);
const machineId = (s: unknown) => (s as { machine?: { id: string } } | undefined)?.machine?.id;
const isCommand = (e: EventObject) => e.type.startsWith('session.') && e.type !== 'session.require_reload';

/**
 * Carries out one generated path of the session chart. Commands are issued through the session
 * handle, one at a time, each after the chart has taken the step before it; turn and effect events
 * are arranged (the held model call is answered so the turn asks, ends or needs a reload; a fault
 * is armed) and then awaited, as the chart takes them, through `inspect`.
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
  private finished: () => void = () => undefined;
  /** Resolves when the chart has taken every step of the path. */
  readonly ended = new Promise<void>((resolve) => (this.finished = resolve));
  /** Every command's answer, so the test can check each came back typed. */
  readonly answers: Array<Promise<unknown>> = [];
  readonly rests: RestLog;
  /** Turns whose terminal status could not be stored; the runtime writes it before the next turn (RT-26). */
  readonly unfinishedWrites = new Set<string>();
  stage!: Stage;

  constructor(readonly path: Step[]) {
    // Off the path: let a held model call end and stop the session, so the test can report it.
    this.rests = new RestLog(path, () => {
      this.reply({ text: 'off the path' });
      void this.stage.session.stop();
      this.finished();
    });
    this.rests.record({ value: 'idle' });
  }

  get done(): boolean {
    return this.next === this.path.length;
  }

  start(): void {
    this.advance();
  }

  readonly observe = (event: InspectionEvent): void => {
    if (event.type === '@xstate.snapshot' && machineId(event.snapshot) === 'session') {
      this.rests.record(event.snapshot as AnyMachineSnapshot);
    }
    if (event.type !== '@xstate.microstep' || machineId(event.snapshot) !== 'session') return;
    // Mid-step the actor still reports its previous snapshot; the microstep's is the current one.
    this.latest = (event.snapshot as AnyMachineSnapshot).context as SessionContext;
    if (!this.awaiting || event.event.type !== this.awaiting.event.type) return;
    for (const undo of this.undos.get(this.next) ?? []) undo();
    if (this.awaiting.event.type === 'effect.failed' && this.latest.lastOutcome && pendingEffectOf(this.awaiting.state.machine) === 'finishTurn') {
      this.unfinishedWrites.add(this.latest.lastOutcome.turnId);
    }
    const output = (event.event as { output?: { compactionId?: string } }).output;
    if (output?.compactionId) this.checkpointId = output.compactionId;
    this.awaiting = null;
    this.next += 1;
    this.stage.checkStep(`after ${event.event.type}`);
    this.armEffect();
    this.advance();
  };

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
      if (isCommand(step.event)) this.issue(step.event as Command);
      else if (!this.armed.has(this.next)) this.arrange(step, this.next);
    }
    if (this.done) this.finished();
  }

  private issue(event: Command): void {
    const { session } = this.stage;
    const context = this.latest ?? (session.actor.getSnapshot().context as SessionContext);
    const active = context.activeTurn?.turnId ?? UNKNOWN_TURN;
    const turnId = event.turnId === UNKNOWN_TURN ? UNKNOWN_TURN : active;
    switch (event.type) {
      case 'session.start_turn':
        return this.answer(session.startTurn({ clientRequestId: event.clientRequestId, input: [{ type: 'text', text: 'do the task' }] }));
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
      case 'session.stop':
        return this.answer(session.stop());
    }
  }

  private answer(reply: Promise<unknown>): void {
    this.answers.push(reply);
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
      case 'session.require_reload':
        // An overflow makes the turn compact; the checkpoint is stored but cannot be read back.
        storage.failWhen('listMessages', () => true);
        undo(() => storage.heal('listMessages'));
        this.reply({ error: 'overflow' });
        return this.reply({ text: 'SUMMARY' });
      case 'effect.failed':
        if (effect === 'finishTurn') return storage.failNext('endTurn');
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
