import type { AnyMachineSnapshot, EventObject, InspectionEvent } from 'xstate';
import type { DispatchOutcome, ToolCallContext } from '../../machines/tool-call.machine.js';
import type { AuthorizationDecision, DispatchDecision, ScriptedReply, ToolExecutionResult } from '../../src/index.js';
import { untilAborted, type Script, type Stage } from './stage.js';
import type { ToolCallScenario } from './tool-call-model.js';
import { pendingEffectOf } from './recorded-effects.js';
import { RestLog } from './rest-log.js';
import { StepCursor } from './step-cursor.js';
import type { PathStep } from './tour.js';

type Step = PathStep<null>;
const value = (s: { value: unknown }) => JSON.stringify(s.value);
const targetOf = (s: unknown) => {
  const snapshot = s as AnyMachineSnapshot | undefined;
  return snapshot?.machine?.id === 'toolCall' && (snapshot.context as ToolCallContext).call.id === 'target' ? snapshot : null;
};
const pendingEffect = (step: Step) => pendingEffectOf(step.state.machine);
const COMMANDS = new Set(['tool.cancel', 'tool.stop', 'permission.resolve']);

/**
 * Carries out one generated path of the tool-call chart: a turn whose model asks for the call (the
 * `target`), after an identical one when the scenario repeats it. When the call comes to rest where
 * a step starts, the step's event is made to happen: the `authorize` hook or the tool answers as
 * the step says, a write fails, or the user cancels, stops or answers the approval.
 */
export class ToolCallDirector implements Script {
  private readonly cursor: StepCursor<null>;
  private current: Step | null = null;
  private turnId = '';
  readonly rests: RestLog;
  private modelCalls = 0;
  stage!: Stage;

  constructor(
    readonly path: Step[],
    readonly scenario: ToolCallScenario,
  ) {
    this.rests = new RestLog(path, () => void this.stage.session.stop());
    this.cursor = new StepCursor(path, COMMANDS);
  }

  get done(): boolean {
    return this.cursor.done;
  }

  readonly observe = (event: InspectionEvent): void => {
    if (event.type === '@xstate.snapshot') {
      const snapshot = targetOf(event.snapshot);
      if (snapshot) this.rests.record(snapshot);
      if (snapshot) this.stage.checkStep(`at ${value(snapshot)}`);
    }
    if (event.type !== '@xstate.microstep') return;
    const snapshot = targetOf(event.snapshot);
    const moved = (event._transitions as unknown as Array<{ target?: unknown }>).some((t) => t.target !== undefined);
    if (snapshot && moved) this.land(snapshot);
  };

  private land(snapshot: AnyMachineSnapshot): void {
    if (!this.cursor.startsAt(snapshot)) return;
    this.turnId = (snapshot.context as ToolCallContext).turnId;
    for (const step of this.cursor.take()) {
      this.current = step;
      this.apply(step);
    }
  }

  private apply(step: Step): void {
    const { session, storage } = this.stage;
    const event = step.event as EventObject & { decision?: string };
    switch (event.type) {
      case 'tool.cancel':
        return void session.cancelTurn(this.turnId);
      case 'tool.stop':
        return void session.stop();
      case 'permission.resolve': {
        // The session records the request once the turn's step is over; answer right after that.
        const answer = { turnId: this.turnId, toolCallId: 'target', decision: event.decision };
        return queueMicrotask(() => void session.resolvePermission(answer));
      }
      case 'effect.failed':
        if (pendingEffect(step) === 'writeResult') storage.failNext('appendMessage');
        if (pendingEffect(step) === 'runControlTool') storage.failNext('savePlan');
        return;
    }
  }

  /** The user's message. */
  userText(): string {
    return 'use the tool';
  }

  modelReply(): ScriptedReply {
    if (this.modelCalls++ > 0) return { text: 'all done' };
    const target = { id: 'target', name: this.scenario.name, argumentsText: this.scenario.argumentsText };
    return { text: 'calling', toolCalls: this.scenario.repeated ? [{ ...target, id: 'before' }, target] : [target] };
  }

  /** The `authorize` hook of the write tool answers what the current step says it answered. */
  authorize(toolCallId: string): AuthorizationDecision {
    if (toolCallId !== 'target') return { decision: 'allow' };
    const event = this.current?.event as { type: string; output?: AuthorizationDecision } | undefined;
    if (event?.type === 'effect.failed') throw new Error('the authorize hook broke');
    return event?.output ?? { decision: 'allow' };
  }

  /** RL-4: the `beforeToolDispatch` hook answers what the current step says the hooks decided. */
  async beforeDispatch(toolCallId: string, signal: AbortSignal): Promise<DispatchDecision | undefined> {
    if (toolCallId !== 'target') return undefined;
    const event = this.current?.event as { type: string; output?: DispatchOutcome } | undefined;
    if (!event || COMMANDS.has(event.type)) return untilAborted(signal, undefined);
    if (event.type === 'effect.failed') throw new Error('the dispatch hook broke');
    const outcome = event.output;
    if (outcome?.decision === 'deny') return { decision: 'deny', reason: outcome.reason };
    if (outcome?.decision === 'rewrite') return { decision: 'rewrite', args: outcome.args };
    // A rewrite the tool's schema refuses: the runtime finds it invalid.
    if (outcome?.decision === 'invalid_rewrite') return { decision: 'rewrite', args: { path: 1 } };
    return undefined;
  }

  /** RL-4: the `afterToolDispatch` hook returns, throws, or waits to be cancelled, as the step says. */
  async afterDispatch(toolCallId: string, signal: AbortSignal): Promise<void> {
    if (toolCallId !== 'target') return;
    const event = this.current?.event as { type: string } | undefined;
    if (!event || COMMANDS.has(event.type)) return untilAborted(signal, undefined);
    if (event.type === 'effect.failed') throw new Error('the result hook broke');
  }

  toolResult(_name: string, signal: AbortSignal, toolCallId: string): ToolExecutionResult | Promise<ToolExecutionResult> {
    if (toolCallId !== 'target') return { status: 'succeeded', content: 'earlier call' };
    const event = this.current?.event as { type: string; output?: ToolExecutionResult } | undefined;
    if (!event || COMMANDS.has(event.type)) return untilAborted<ToolExecutionResult>(signal, { status: 'cancelled', content: 'stopped' });
    if (event.type === 'effect.failed') throw new Error('the tool broke');
    return event.output ?? { status: 'succeeded', content: 'ok' };
  }
}
