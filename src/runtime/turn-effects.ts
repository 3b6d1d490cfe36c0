import type { EventObject } from 'xstate';
import { approvalBatchAction, type TurnContext } from '../../machines/turn.machine.js';
import { callOutputOf } from '../../machines/tool-call.contract.js';
import type {
  BeganTurn,
  BeginTurnInput,
  ResumePoint,
  CallModelInput,
  PhaseParams,
  PreparedOutput,
  SampleInput,
  SkipCallsInput,
  TurnEffectInput,
  TurnEffects,
  WriteAssistantInput,
} from '../../machines/turn.effects.js';
import { loopRulesOf, type GuardrailTriggered, type LoopTracker } from '../../machines/guardrails.js';
import { abandonStartedReads, ParallelReads, type RunCleared, type RunDispatchHooks, type RunRead, type StartedRead } from './parallel-reads.js';

/** Issue 30: a write or command started alongside others, stopped when the turn ended before its result was written. */
const RAN_AHEAD_STOPPED = 'the call was started alongside the calls before it and stopped when the turn ended: whether it took effect is unknown';
import { worldStateSampler } from './world-state-effects.js';
import { closeUnclosedTurn } from './unclosed-turn.js';
import { EffectAborted } from './effect-aborted.js';
import type { EffectCancellation, EffectHandlers } from './effect-port.js';
import { prepare, type PreparedModelCall } from '../context/engine.js';
import { contextLimits, reachesCompactionLine, type ModelContextLimits } from '../context/limits.js';
import { systemContext } from '../context/system-context.js';
import { consumeModelStream } from '../model/consume-stream.js';
import { NOT_EXECUTED_RESULT_TEXT, type StoredMessage, type ToolResultStatus } from '../protocol/messages.js';
import type { ModelCapabilities, ModelRequest, ModelResponse } from '../protocol/model.js';
import { TurnFailure } from '../protocol/tool-result.js';
import type { Toolset } from '../tools/toolset.js';
import { emit, persistAndAppend, type RuntimeDeps, type SessionEnv } from './session-env.js';
import type { TraceRecorder } from './trace-recorder.js';
import type { SpanFacts, TraceSpan } from '../protocol/trace.js';
import { assignToolCallIds } from './tool-call-ids.js';
import { recordFinishReason, recordUsage, turnTokens } from './turn-meter.js';
import { budgetAtStart, chargePrincipal } from './principal-budget.js';
import { contextHooks } from './context-hooks.js';
import { skippedCallAudit } from './tool-audit.js';
import type { SystemPart } from '../protocol/model.js';
import { consultMistakeLimitEffect } from './mistake-limit-effect.js';
import { emitGuardrailTriggered } from './guardrail-updates.js';
import { interruptedResult, isIdempotent, neverRunsUnasked, planResumption } from './turn-resumption.js';

/** The last call under the token budget carries this instead of the tools. */
export const CONCLUDE_INSTRUCTION =
  "This turn's token budget is spent. Do not call any tool: answer now with what you have, and say what is left undone.";

export interface TurnEffectDeps extends RuntimeDeps {
  toolset: Toolset;
  trace: TraceRecorder;
}

/** The turn chart's effects (RT-10), supplied with `turnMachine.provide()`. */
export function turnEffects(deps: TurnEffectDeps, runners: { runRead: RunRead; runDispatchHooks: RunDispatchHooks; runCleared: RunCleared }) {
  const parallel = new ParallelReads(deps.toolset, runners.runRead, runners.runDispatchHooks, runners.runCleared);
  const { env: envOf, storage, trace, now } = deps;
  // Each agent may have its own model (issue 24): its limits are worked out once per capabilities object.
  const limitsByCapabilities = new WeakMap<ModelCapabilities, ModelContextLimits>();
  const limitsOf = (env: SessionEnv): ModelContextLimits => {
    const { capabilities } = env.config.model;
    let limits = limitsByCapabilities.get(capabilities);
    if (!limits) {
      limits = contextLimits(capabilities);
      limitsByCapabilities.set(capabilities, limits);
    }
    return limits;
  };

  const hooks = contextHooks(deps);

  /** Issue 30: the approval batch from call `from` of the turn's response, as long as it is; 0 for none. */
  const batchLength = (context: TurnContext, from: number, loop: LoopTracker): number =>
    parallel.approvalBatchLength(envOf(context.sessionId), context.response?.toolCalls ?? [], from, loop, loopRulesOf(context.limits));

  /** The one assembly path (CW-1): this turn's system context (with what context hooks added), the conversation, the tool surface. */
  const prepareFor = (env: SessionEnv, system: readonly SystemPart[] = env.conversation.turnSystem): PreparedModelCall =>
    prepare({
      system,
      conversation: env.conversation.chat.view(),
      tools: env.config.tools(),
      capabilities: env.config.model.capabilities,
      watermark: env.conversation.chat.watermark,
    });

  const beginTurn = async (input: BeginTurnInput): Promise<BeganTurn> => {
    const env = envOf(input.sessionId);
    if (input.resume !== null) return { principalBudget: await budgetAtStart(deps, env), resumeAt: await reopenTurn(env, input) };
    const prepared = env.turns.preparedInputs.get(input.turnId);
    if (!prepared) throw new TurnFailure('chat_state_error', 'the accepted input of this turn is missing');
    // Issue 25: the principal's daily budget is read beside the first write, not after it; the chart judges it.
    const budget = budgetAtStart(deps, env);
    try {
      // A queued turn's row must exist before it can move to running: its write may still be under way.
      if (prepared.fromQueue) await env.turns.stored.wait(input.turnId);
      await closeUnclosedTurn(env, deps);
      const messages = prepared.messages.map((message, i) => ({
        id: deps.newId('msg'),
        sessionId: env.config.id,
        turnId: input.turnId,
        sequence: env.conversation.chat.nextSequence + i,
        createdAtMs: now(),
        message,
      }));
      await storage.beginTurn(
        {
          id: input.turnId,
          sessionId: env.config.id,
          clientRequestId: prepared.clientRequestId,
          startedAtMs: now(),
          run: { id: prepared.runId, trigger: prepared.trigger },
          fromQueue: prepared.fromQueue,
          principal: env.config.principal,
          traceParent: prepared.traceParent,
        },
        messages,
        env.config.fence,
      );
      openTurn(env, input, messages);
    } catch (error) {
      env.turns.stored.settle(input.turnId, error);
      throw error;
    }
    return { principalBudget: await budget };
  };

  /**
   * Issue 26: the turn's row and messages are stored already: it is opened as it stands. The call
   * that may have run and may not run again gets its `interrupted` result here, written and
   * announced like any result, before the turn goes on.
   */
  const reopenTurn = async (env: SessionEnv, input: BeginTurnInput): Promise<ResumePoint> => {
    const { turns, conversation, config } = env;
    const record = turns.resumed;
    turns.resumed = null;
    turns.stored.settle(input.turnId);
    turns.openTurnRow = input.turnId;
    const own = record?.turnId === input.turnId ? record : null;
    const toolOf = (name: string) => (deps.toolset.isControlTool(name) ? undefined : deps.toolset.toolFor(config.agent, name));
    const plan = planResumption(
      own?.messages ?? [],
      input.turnId,
      (call) => own?.notRun.has(call.id) === true || (own?.asked.has(call.id) !== true && neverRunsUnasked(config, toolOf(call.name), call.name)),
      (call) => isIdempotent(toolOf(call.name), call.name, deps.toolset.isControlTool(call.name)),
      config.agent.parallelToolCalls > 1,
    );
    conversation.turnStartSequence = plan.startSequence ?? conversation.chat.nextSequence;
    conversation.turnSystem = systemContext(config.agent.systemPrompt, config.tools());
    trace.start(span(input, `turn:${input.turnId}:resumed`, 'turn', 'turn (resumed)', 'system', now(), turnFacts(env, input.turnId, own?.reason, own?.traceParent)));
    turns.resumedSpan = input.turnId;
    for (const call of plan.interrupted) {
      const { message, audit } = interruptedResult(call, config.principal);
      await persistAndAppend(env, deps, input.turnId, message, undefined, audit);
      emit(env, input.turnId, { type: 'tool_call_started', toolCallId: call.id, name: call.name, status: 'cancelled' });
      emit(env, input.turnId, { type: 'tool_call_finished', toolCallId: call.id, status: 'cancelled' });
    }
    return plan.point;
  };

  const openTurn = (env: SessionEnv, input: TurnEffectInput, messages: StoredMessage[]): void => {
    const { turns, conversation, config } = env;
    turns.stored.settle(input.turnId);
    const facts = turnFacts(env, input.turnId);
    turns.preparedInputs.delete(input.turnId);
    turns.openTurnRow = input.turnId;
    conversation.turnStartSequence = messages[0]?.sequence ?? conversation.chat.nextSequence;
    for (const message of messages) conversation.chat.append(message);
    trace.start(span(input, `turn:${input.turnId}`, 'turn', 'turn', 'system', now(), facts));
    conversation.turnSystem = systemContext(config.agent.systemPrompt, config.tools());
  };

  const sampleWorldState = worldStateSampler(deps);

  /**
   * RT-10: sample world state, then build this call's request once; at the line, prune older turns
   * and build again. RL-4's context hooks run around the build and may add system parts.
   */
  const prepareRequest = async (input: SampleInput, cancellation: EffectCancellation): Promise<PreparedOutput> => {
    await sampleWorldState(input, cancellation);
    if (cancellation.aborted) throw new EffectAborted('preparing the request');
    const env = envOf(input.sessionId);
    const { config, conversation } = env;
    const system = config.hooks.beforeContextBuild.length === 0 ? conversation.turnSystem : await hooks.before(env, input, cancellation);
    let prepared = prepareFor(env, system);
    const limits = limitsOf(env);
    const over = (p: PreparedModelCall) => reachesCompactionLine(p.budget.estimatedInputTokens, limits);
    if (over(prepared) && conversation.chat.watermark < conversation.turnStartSequence) {
      conversation.chat.watermark = conversation.turnStartSequence;
      prepared = prepareFor(env, system);
    }
    if (config.hooks.afterContextBuild.length > 0) {
      const extended = await hooks.after(env, input, prepared, system, cancellation);
      if (extended !== system) prepared = prepareFor(env, extended);
    }
    conversation.prepared = prepared;
    // The token budget is the chart's to judge (a guard): it gets the numbers.
    return { overLine: over(prepared), turnTokens: turnTokens(env, input.turnId), nextCallTokens: prepared.budget.estimatedInputTokens };
  };

  const drainMailbox = async (input: TurnEffectInput): Promise<void> => {
    const env = envOf(input.sessionId);
    while (env.conversation.mailbox.length > 0) {
      const next = env.conversation.mailbox[0]!;
      const message = next.note ? ({ role: 'user', kind: 'agent_note', text: next.text } as const) : ({ role: 'user', kind: 'agent_message', text: next.text, from: next.from } as const);
      await persistAndAppend(env, deps, input.turnId, message);
      env.conversation.mailbox.shift();
    }
  };

  const callModel = async (input: CallModelInput, cancellation: EffectCancellation): Promise<ModelResponse> => {
    const env = envOf(input.sessionId);
    const { request: prepared } = env.conversation.prepared ?? prepareFor(env);
    env.conversation.prepared = null;
    const request = input.concluding ? concludingRequest(prepared) : prepared;
    const spanId = `model:${input.turnId}:${input.modelCallIndex}`;
    const identity = env.config.model.identity;
    const startedAtMs = now();
    // Content only for an observer that records it (issue 27): a reference to the request, never a copy.
    const content = trace.recordsContent;
    const startFacts: SpanFacts = {
      ...(identity && { provider: identity.provider, requestModel: identity.model }),
      ...(input.concluding && { concluding: true }),
      ...(content && { content: { request } }),
    };
    trace.start(span(input, spanId, 'model_call', `model call ${input.modelCallIndex}`, 'model', startedAtMs, startFacts));
    try {
      const { response, usage, responseModel, firstOutputAtMs } = await consumeModelStream(env.config.model, request, cancellation, {
        text: (text) => cancellation.aborted || emit(env, input.turnId, { type: 'text_delta', text }),
        reasoning: (text) => cancellation.aborted || emit(env, input.turnId, { type: 'reasoning_delta', text }),
        now,
      });
      const facts: SpanFacts = {
        ...(responseModel && { responseModel }),
        ...(usage && { usage }),
        ...(response.finishReason && { finishReasons: [response.finishReason] }),
        ...(firstOutputAtMs !== undefined && { firstTokenMs: firstOutputAtMs - startedAtMs }),
        ...(content && { content: { response } }),
      };
      trace.end(spanId, { status: 'succeeded', errorCode: null, endedAtMs: now(), facts });
      if (usage) {
        recordUsage(env, input.turnId, usage);
        await chargePrincipal(deps, env, usage);
      }
      recordFinishReason(env, input.turnId, response.finishReason);
      // RT-15: ids are the runtime's from here on; the provider's stay beside them for its requests.
      return assignToolCallIds(response, (id) => env.conversation.chat.usesCallId(id), () => deps.newId('call'));
    } catch (error) {
      trace.end(spanId, { status: cancellation.aborted ? 'cancelled' : 'failed', errorCode: errorCode(error), endedAtMs: now() });
      throw error;
    }
  };

  const writeAssistant = async (input: WriteAssistantInput): Promise<void> => {
    const env = envOf(input.sessionId);
    const { text, reasoning, toolCalls, providerData } = input.response;
    await persistAndAppend(env, deps, input.turnId, { role: 'assistant', text, reasoning, toolCalls, ...(providerData && { providerData }) });
    emit(env, input.turnId, { type: 'draft_cleared' });
  };

  const skipToolCalls = async (input: SkipCallsInput): Promise<void> => {
    const env = envOf(input.sessionId);
    const answered = new Set(env.conversation.chat.conversation().flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
    // Issue 30: a write or command started ahead may have taken effect: its result must not say it never ran.
    const ranAhead = new Map(input.calls.flatMap((c) => {
      const started = env.turns.startedReads.get(c.id);
      return started && started.effect !== 'read' ? [[c.id, started] as const] : [];
    }));
    // Calls started ahead that will not run now stop (a cancel reaches every running call).
    abandonStartedReads(env, input.calls.map((c) => c.id));
    // Issue 30: a call its approval batch held has its span open and its start announced already.
    const opened = new Set(input.opened);
    for (const call of input.calls.filter((c) => !answered.has(c.id))) {
      const { status, content } = await skippedResult(ranAhead.get(call.id));
      const message = { role: 'tool', toolCallId: call.id, toolName: call.name, status, content } as const;
      await persistAndAppend(env, deps, input.turnId, message, undefined, { ...skippedCallAudit(call, env.config.principal), status });
      const spanId = toolSpanId(input.turnId, call.id);
      if (!opened.has(call.id)) trace.start(span(input, spanId, 'tool_call', call.name, 'system', now()));
      trace.end(spanId, { status: 'cancelled', errorCode: 'turn_terminated', endedAtMs: now() });
      if (!opened.has(call.id)) emit(env, input.turnId, { type: 'tool_call_started', toolCallId: call.id, name: call.name, status: 'cancelled' });
      emit(env, input.turnId, { type: 'tool_call_finished', toolCallId: call.id, status });
    }
  };

  /**
   * A skipped call's result: never run, `cancelled`; a write or command started ahead (issue 30) says
   * what its run came to when it has ended, else that whether it took effect is unknown.
   */
  const skippedResult = async (started: StartedRead | undefined): Promise<{ status: ToolResultStatus; content: string }> => {
    if (!started) return { status: 'cancelled', content: NOT_EXECUTED_RESULT_TEXT };
    if (!started.settled) return { status: 'outcome_unknown', content: RAN_AHEAD_STOPPED };
    const result = await started.result;
    return { status: result.status, content: result.content };
  };

  /** Resolves when the hold is released, or at once when there is none any more; a cancel ends the wait. */
  const awaitRelease = async (input: TurnEffectInput, cancellation: EffectCancellation): Promise<void> => {
    const hold = envOf(input.sessionId).turns.hold;
    if (!hold || cancellation.aborted) return;
    const { signal } = cancellation;
    await new Promise<void>((resolve) => {
      signal.addEventListener('abort', () => resolve(), { once: true });
      void hold.released.then(resolve);
    });
  };

  const handlers: Omit<EffectHandlers<TurnEffects>, 'compact'> = {
    awaitRelease,
    beginTurn,
    drainMailbox,
    prepareRequest,
    callModel,
    writeAssistant,
    skipToolCalls,
    consultMistakeLimit: consultMistakeLimitEffect(deps),
  };
  return {
    handlers,
    guards: {
      mailboxHasMessages: ({ context }: { context: TurnEffectInput }) => envOf(context.sessionId).conversation.mailbox.length > 0,
      holdRequested: ({ context }: { context: TurnEffectInput }) => envOf(context.sessionId).turns.hold !== null,
      callsReadInParallel: ({ context }: { context: TurnContext }) => parallel.beginsRun(envOf(context.sessionId), context, context.toolIndex),
      nextCallsReadInParallel: ({ context }: { context: TurnContext }) => parallel.beginsRun(envOf(context.sessionId), context, context.toolIndex + 1),
      // Issue 30: the loop count before the batch's first call: the turn's after the response, the done call's after a call.
      opensApprovalBatch: ({ context }: { context: TurnContext }) => batchLength(context, context.toolIndex, context.loop) > 0,
      nextOpensApprovalBatch: ({ context, event }: { context: TurnContext; event: EventObject }) =>
        batchLength(context, context.toolIndex + 1, callOutputOf(event).loop) > 0,
    },
    actions: {
      startParallelReads: ({ context }: { context: TurnContext }) => parallel.start(envOf(context.sessionId), context),
      // Taken once the turn is at the batch's first call: its loop count is the one before it.
      openApprovalBatch: approvalBatchAction((context) => batchLength(context, context.toolIndex, context.loop)),
      startClearedCall: ({ context, event }: { context: TurnContext; event: EventObject }) => {
        const { toolCallId, cleared } = callOutputOf(event);
        const call = context.response?.toolCalls.find((c) => c.id === toolCallId);
        if (call && cleared && cleared.result === null) parallel.startCleared(envOf(context.sessionId), context, call, cleared);
      },
      emitPhase: ({ context }: { context: TurnEffectInput }, params: PhaseParams) =>
        emit(envOf(context.sessionId), context.turnId, { type: 'phase_changed', phase: params.phase }),
      emitGuardrailTriggered: ({ context }: { context: TurnEffectInput }, params: GuardrailTriggered) =>
        emitGuardrailTriggered(envOf(context.sessionId), context.turnId, params),
      discardDraft: ({ context }: { context: TurnEffectInput }) => {
        const live = envOf(context.sessionId).output.live.runtime;
        if (live.kind === 'running' && (live.draftText || live.draftReasoning)) {
          emit(envOf(context.sessionId), context.turnId, { type: 'draft_cleared' });
        }
      },
    },
  };
}

/**
 * A tool call's span id. Call ids are unique within a session only (RT-15 adopts a provider's `call_0`
 * when the session has none yet), while span ids are one key across every session: the turn's id makes it so.
 */
export function toolSpanId(turnId: string, toolCallId: string): string {
  return `tool:${turnId}:${toolCallId}`;
}

export function span(
  input: TurnEffectInput,
  id: string,
  kind: 'turn' | 'model_call' | 'tool_call',
  name: string,
  source: 'model' | 'registry' | 'control_tool' | 'system',
  startedAtMs: number,
  facts?: SpanFacts,
): TraceSpan {
  return { id, sessionId: input.sessionId, turnId: input.turnId, kind, name, source, status: 'running', errorCode: null, startedAtMs, endedAtMs: null, ...(facts && { facts }) };
}

/**
 * What a turn's span starts with (issue 27): its agent, run and trigger, the traceparent it is a child
 * of (accepted with its input, or stored with its row for a resumed turn), and why it goes on here if it was resumed.
 */
function turnFacts(env: SessionEnv, turnId: string, resumeReason?: string, storedTraceParent?: string | null): SpanFacts {
  const prepared = env.turns.preparedInputs.get(turnId);
  const runId = prepared?.runId ?? env.turns.runs.get(turnId);
  const identity = env.config.model.identity;
  const traceParent = prepared?.traceParent ?? storedTraceParent;
  return {
    agent: env.config.agentName,
    ...(traceParent && { traceParent }),
    // The agent's model, as the GenAI conventions ask of an `invoke_agent` span at its start.
    ...(identity && { provider: identity.provider, requestModel: identity.model }),
    ...(runId && { runId }),
    ...(prepared && { trigger: prepared.trigger }),
    ...(resumeReason && { resumeReason, leaseTakeover: resumeReason === 'owner_lost' }),
  };
}

/** The token budget's last call: no tools, and an instruction to conclude after the rest of the system context. */
function concludingRequest(request: ModelRequest): ModelRequest {
  return { ...request, tools: [], system: [...request.system, { key: 'core/token-budget', content: CONCLUDE_INSTRUCTION }] };
}

function errorCode(error: unknown): string {
  const kind = (error as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' ? `model_${kind}` : 'model_error';
}
