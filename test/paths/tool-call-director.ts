import type { AnyMachineSnapshot, EventObject, InspectionEvent } from 'xstate';
import type { ToolCallContext } from '../../machines/tool-call.machine.js';
import type { DispatchOutcome } from '../../machines/tool-call.effects.js';
import type { AuthorizationDecision, DispatchDecision, ModelRequest, ScriptedReply, ToolExecutionResult } from '../../src/index.js';
import { untilAborted, type Script, type Stage } from './stage.js';
import { CHILD_ID, RETRY_BACKOFF, SPAWN, SPAWN_FIRST, type ToolCallScenario } from './tool-call-model.js';
import { pendingEffectOf } from './recorded-effects.js';
import { RestLog } from './rest-log.js';
import { StepCursor } from './step-cursor.js';
import type { PathStep } from './tour.js';

type Step = PathStep<null>;
const value = (s: { value: unknown }) => JSON.stringify(s.value);
const callOf = (s: unknown, id: string) => {
  const snapshot = s as AnyMachineSnapshot | undefined;
  return snapshot?.machine?.id === 'toolCall' && (snapshot.context as ToolCallContext).call.id === id ? snapshot : null;
};
const targetOf = (s: unknown) => callOf(s, 'target');

/** The child's id, from the `spawn_agent` result the model was just sent. */
function spawnedId(request: ModelRequest): string {
  const result = request.messages.find((m) => m.role === 'tool' && m.toolName === 'spawn_agent');
  return result?.role === 'tool' ? (JSON.parse(result.content) as { agentId: string }).agentId : 'none';
}
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
  /** The sub-agent answers once a step says the target's wait gets its answer. */
  private releaseHelper: () => void = () => undefined;
  private readonly helperAnswers = new Promise<void>((resolve) => (this.releaseHelper = resolve));
  private firstWaitTimedOut = false;
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
    // RT-14's stop: the wait before the target times out, so the target's timeout is the second in a row.
    const before = callOf(event.snapshot, 'before2');
    if (before?.matches({ active: 'waiting_agent' }) && !this.firstWaitTimedOut) {
      this.firstWaitTimedOut = true;
      void this.stage.clock.expire();
    }
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
        if (pendingEffect(step) === 'runControlTool') storage.failNext(this.scenario.name === 'switch_agent' ? 'switchAgent' : 'savePlan');
        // A spawn whose session cannot be stored; a message or wait whose child cannot be looked up.
        if (pendingEffect(step) === 'delegate') storage.failNext(this.scenario.name === 'spawn_agent' ? 'createSession' : 'getSession');
        if (pendingEffect(step) === 'waitAgent') storage.failNext('getSession');
        return;
      case RETRY_BACKOFF:
        return void this.stage.clock.expire();
      case 'effect.done':
        if (pendingEffect(step) !== 'waitAgent' || !this.scenario.child) return;
        // The wait's time runs out on the chart clock, or the child answers first.
        if ((event as { output?: { timedOut?: boolean } }).output?.timedOut) return void this.stage.clock.expire();
        return this.releaseHelper();
    }
  }

  /** The sub-agent's model: it answers when the path lets it, else waits for its turn to be cancelled or stopped. */
  helperReply(signal: AbortSignal): Promise<ScriptedReply> {
    return Promise.race([this.helperAnswers.then(() => ({ text: 'helper answer' })), untilAborted<ScriptedReply>(signal, { text: 'stopped' })]);
  }

  /** The user's message. */
  userText(): string {
    return 'use the tool';
  }

  modelReply(_signal: AbortSignal, request: ModelRequest): ScriptedReply {
    const call = this.modelCalls++;
    if (this.scenario.child) return this.childWaitReply(call, request);
    if (call > 0) return { text: 'all done' };
    const target = { id: 'target', name: this.scenario.name, argumentsText: this.scenario.argumentsText };
    if (this.scenario.limit) return { text: 'calling', toolCalls: [{ id: 'before', name: 'spawn_agent', argumentsText: SPAWN_FIRST }, target] };
    return { text: 'calling', toolCalls: this.scenario.repeated ? [{ ...target, id: 'before' }, target] : [target] };
  }

  /** Spawn the child first; then wait on it (after a wait that times out, when the scenario repeats). */
  private childWaitReply(call: number, request: ModelRequest): ScriptedReply {
    if (call === 0) return { text: 'spawning', toolCalls: [{ id: 'before', name: 'spawn_agent', argumentsText: SPAWN }] };
    if (call > 1) return { text: 'all done' };
    const target = { id: 'target', name: 'wait_agent', argumentsText: this.scenario.argumentsText.replace(CHILD_ID, spawnedId(request)) };
    return { text: 'waiting', toolCalls: this.scenario.repeated ? [{ ...target, id: 'before2' }, target] : [target] };
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
    // Issue 30: the run passes the tool's time limit (the agent's `toolTimeoutMs`), or says its failure may pass.
    const failure = (event.output as { failure?: string } | undefined)?.failure;
    if (failure === 'timeout') return untilAborted<ToolExecutionResult>(signal, { status: 'cancelled', content: 'stopped' });
    if (failure === 'transient') return { status: 'failed', content: 'flaky', transient: true };
    return event.output ?? { status: 'succeeded', content: 'ok' };
  }
}
