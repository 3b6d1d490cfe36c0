import { and, assign, sendParent, sendTo, setup } from 'xstate';
import type { ToolCallPart } from '../src/protocol/messages.js';
import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { ModelResponse } from '../src/protocol/model.js';
import type { PermissionDecision, TurnResumeReason } from '../src/protocol/updates.js';
import { toolCallMachine } from './tool-call.machine.js';
import { callErrorOf, callOutputOf, type ClearedCall, type ToolCallCommand, type ToolCallNotice, type TurnTermination } from './tool-call.contract.js';
import { stallWatchdogMachine, WATCHDOG } from './stall-watchdog.machine.js';
import { DEFAULT_GUARDRAILS, EMPTY_TALLY, FRESH_TRACKER, loopRulesOf, mistakeLimitReached, mistakesAfter, tallyResult } from './guardrails.js';
import type { GuardrailLimits, GuardrailTrackers, GuardrailTriggered, LoopTracker, StepTally } from './guardrails.js';
import { notProvided } from './not-provided.js';
import { failureOf } from './failure.js';
import { abortEffectAction, cancelEffectAction, failedError, requestEffectAction, type EffectReply } from './effect-port.js';
import { beganOf, errorTraitsOf, mistakeDecisionOf, preparedOf, responseOf, type PhaseParams, type TurnEffectInput, type TurnEffects } from './turn.effects.js';
import { messageOf } from '../src/protocol/error-message.js';

/**
 * One user turn: the agent loop of RT-10 as a chart.
 * starting → running_model { checking → (consulting →)? holding? → draining_mailbox? → preparing →
 * (compacting → preparing →) calling → writing_response } → completed | running_tools { tool_call
 * (one actor per call, in order) } → running_model … ; a call that ends the turn, or an interrupt,
 * → skipping_remaining. The guardrails (GR-1…GR-3) are its guards and transitions: the mistake
 * breaker in `checking` → `consulting`, the token budget in `preparing` and `writing_response`,
 * the principal's daily token budget in `starting` (issue 25: spent, the turn ends
 * `budget_exhausted` before any model call), the no-progress watchdog an invoked chart of its own that sends
 * `turn.interrupt { reason: 'timeout', limit: 'stall' }`. `holding` is the checkpoint a paused task
 * waits at (LC-1, LC-4). Issue 30: an approval batch walks its calls twice — held as each is cleared
 * (asked and allowed, its run started), then taken up in order to write their results.
 *
 * The effects it asks the runtime for are machines/turn.effects.ts; what it and its tool calls say to
 * each other, machines/tool-call.contract.ts. Every guard and action is named in `setup`.
 */

export interface TurnLimits {
  maxModelCalls: number;
  doomLoopThreshold: number;
  /** RL-3: a run still going after this long is cancelled and ends `timed_out`; null for no limit. */
  runTimeoutMs: number | null;
  /** GR-1…GR-3: the agent's guardrail profile; absent, the default profile's. */
  guardrails?: GuardrailLimits;
}

export interface TurnInput {
  sessionId: string;
  turnId: string;
  limits: TurnLimits;
  /** GR-2a: the session's loop and mistake trackers as its last turn left them; the turn goes on from there. */
  trackers: GuardrailTrackers;
  /** Issue 26: the turn goes on from where a departed host left it, and why; null (or absent) for a new turn. */
  resume?: TurnResumeReason | null;
}

/** How the turn ended, and the trackers it hands back to its session (GR-2a). */
export interface TurnOutput {
  outcome: TurnOutcome;
  trackers: GuardrailTrackers;
}

/** What ended the turn early: a user cancel, the run's time limit (RL-3), no progress (the watchdog), or the session stopping. */
export type Interrupt = 'cancel' | 'timeout' | 'stall' | 'stop' | null;

/**
 * Ends the turn early, whatever it is doing: the user cancels; a time limit passes — the run's
 * (RL-3, sent by the session) or the no-progress watchdog's (`stall`); or the session stops. One
 * event, so each state says once what an interrupt does there; the first one decides how the turn ends.
 */
export type TurnInterrupt =
  | { type: 'turn.interrupt'; reason: 'cancel' | 'stop' }
  | { type: 'turn.interrupt'; reason: 'timeout'; limit: 'run' | 'stall' };

/**
 * Issue 30: the calls `[start, end)` of the response whose approvals are all asked, in provider
 * order, before any of their results is written; each starts as soon as it is cleared (asked and
 * allowed, or needing no approval). `releasing`: the last of them is cleared, and their charts take
 * up their runs and write their results in provider order.
 */
interface ApprovalBatch {
  start: number;
  end: number;
  releasing: boolean;
}

/** No call cleared: one shared object, so a turn outside a batch allocates none. */
const NONE_CLEARED: Readonly<Record<string, ClearedCall>> = Object.freeze({});

/** The trackers of the input live on as `loop` and `mistakes`, which the turn moves. */
export interface TurnContext extends Omit<TurnInput, 'trackers' | 'resume'> {
  /** Issue 26: why this turn is resumed; null for a turn begun here. */
  resume: TurnResumeReason | null;
  /** The number of the model call the turn makes next (from 1): it moves on when a response arrives. */
  modelCallIndex: number;
  /** World-state sample of this model call: 1, or 2 right after an in-turn compaction (CW-2). */
  sample: number;
  /** This model call was already compacted for: another trip over the line is a failure, not a loop (CP-1). */
  compactedThisCall: boolean;
  /** The one compact-and-resubmit after an explicit overflow has been spent (RT-10). */
  overflowRetried: boolean;
  response: ModelResponse | null;
  /** The next of the response's tool calls to run (`response.toolCalls`, provider order). */
  toolIndex: number;
  /** The run of consecutive tool calls so far (GR-1), carried from call to call and from turn to turn (GR-2a). */
  loop: LoopTracker;
  /** What the current model step's tool calls came to (GR-2). */
  step: StepTally;
  /** Model steps in a row whose tool calls all failed (GR-2), counted across the session's turns (GR-2a). */
  mistakes: number;
  /** The token budget is spent: this is the last model call, without tools. */
  concluding: boolean;
  interrupt: Interrupt;
  termination: TurnTermination | null;
  pendingPermission: string | null;
  outcome: TurnOutcome | null;
  /** Issue 30: the approval batch the turn is in; null outside one. */
  approvalBatch: ApprovalBatch | null;
  /** Issue 30: what each call of the batch came to as it was cleared, by call id. */
  cleared: Readonly<Record<string, ClearedCall>>;
}

export type TurnEvent =
  | TurnInterrupt
  /** `principal`: who answered (issue 25), passed on to the call for its audit row. */
  | { type: 'turn.resolve_permission'; toolCallId: string; decision: PermissionDecision; principal?: string }
  | ToolCallNotice
  | EffectReply;

/** A guard the runtime supplies: it reads the turn's context. */
type ContextGuard = [{ context: TurnContext }];

/** A model-port error maps to RT-9's codes: `protocol` → model_protocol_error, anything else → model_error. */
function modelFailure(error: unknown): TurnOutcome {
  const kind = (error as { kind?: unknown } | null)?.kind;
  if (kind === 'protocol') return failureOf(error, 'model_protocol_error');
  return failureOf(error, 'model_error');
}

const STOPPED: TurnOutcome = { status: 'failed', code: 'actor_stopped', message: 'the session stopped during the turn' };

function interruptOf(event: TurnEvent): Exclude<Interrupt, null> {
  if (event.type !== 'turn.interrupt') return 'cancel';
  if (event.reason !== 'timeout') return event.reason;
  return event.limit === 'stall' ? 'stall' : 'timeout';
}

/** What an interrupt tells the running tool call: a stop, or a cancel that says whose (the user's, a time limit's). */
function toolCommandOf(event: TurnEvent): ToolCallCommand {
  if (event.type === 'turn.interrupt' && event.reason === 'stop') return { type: 'tool.stop' };
  if (event.type !== 'turn.interrupt' || event.reason !== 'timeout') return { type: 'tool.cancel' };
  return { type: 'tool.cancel', reason: event.limit === 'stall' ? 'stall' : 'timeout' };
}

// The events the turn passes on, read on the transitions that take them.
const permissionRequestOf = (event: TurnEvent) => event as Extract<TurnEvent, { type: 'tool.permission_requested' }>;
const permissionAnswerOf = (event: TurnEvent) => event as Extract<TurnEvent, { type: 'turn.resolve_permission' }>;

const guardrailsOf = (context: TurnContext) => context.limits.guardrails;
const stopMessageOf = (event: TurnEvent) => {
  const decision = mistakeDecisionOf(event);
  return decision?.action === 'stop' ? decision.message : '';
};

const STALLED_MESSAGE = (context: TurnContext) => `the turn made no progress for ${guardrailsOf(context)?.stallTimeoutMs ?? 0} ms`;

export const turnMachine = setup({
  types: {
    input: {} as TurnInput,
    context: {} as TurnContext,
    events: {} as TurnEvent,
    output: {} as TurnOutput,
  },
  actors: {
    toolCall: toolCallMachine,
    stallWatchdog: stallWatchdogMachine,
  },
  guards: {
    /** Supplied by the runtime: agent messages are waiting (RT-4). */
    mailboxHasMessages: notProvided<ContextGuard, boolean>('turn', 'mailboxHasMessages'),
    /** Supplied by the runtime: the session is asked to hold its turns at their next checkpoint (a task pausing). */
    holdRequested: notProvided<ContextGuard, boolean>('turn', 'holdRequested'),
    /**
     * Supplied by the runtime (RL-5): with parallel tool calls on, the calls from `toolIndex` (or the
     * one after it, for `nextCallsReadInParallel`) begin a run of at least two calls that need no
     * approval and have not been started yet — reads, and (issue 30) writes and commands the mode allows.
     */
    callsReadInParallel: notProvided<ContextGuard, boolean>('turn', 'callsReadInParallel'),
    nextCallsReadInParallel: notProvided<ContextGuard, boolean>('turn', 'nextCallsReadInParallel'),
    /**
     * Supplied by the runtime (issue 30): with parallel tool calls on, the calls from `toolIndex` (or
     * the one after it) begin a run of at least two that may run side by side once cleared, and at
     * least one of them asks for an approval: an approval batch.
     */
    opensApprovalBatch: notProvided<ContextGuard, boolean>('turn', 'opensApprovalBatch'),
    nextOpensApprovalBatch: notProvided<ContextGuard, boolean>('turn', 'nextOpensApprovalBatch'),
    /** Issue 30: the turn is walking an approval batch to clear its calls (none of them has its result yet). */
    clearingBatch: ({ context }) => context.approvalBatch !== null && !context.approvalBatch.releasing,
    /** Issue 30: the call just done was held by its approval batch: it has not run or written yet. */
    callHeld: ({ event }) => callOutputOf(event).cleared !== null,
    /** Issue 30: the held call was the batch's last, or ends the turn (a denial, a cancel): the batch is released up to it. */
    clearanceEndsBatch: ({ context, event }) => callOutputOf(event).termination !== null || context.toolIndex + 1 >= context.approvalBatch!.end,
    /** Issue 30: the next call is one of the released batch: it takes up what it came to, and nothing opens a run around it. */
    nextInReleasedBatch: ({ context }) => context.approvalBatch?.releasing === true && context.toolIndex + 1 < context.approvalBatch.end,
    interrupted: ({ context }) => context.interrupt !== null,
    reachedMaxModelCalls: ({ context }) => context.modelCallIndex > context.limits.maxModelCalls,
    responseHasNoToolCalls: ({ context }) => (context.response?.toolCalls.length ?? 0) === 0,
    isLastToolCall: ({ context }) => context.toolIndex + 1 >= toolCallsOf(context).length,
    isPendingPermission: ({ context, event }) =>
      event.type === 'turn.resolve_permission' && context.pendingPermission === event.toolCallId,
    /** The call just done ended the turn (a cancel, a stop, a denial, a doom loop, a failed write). */
    callEndedTurn: ({ event }) => callOutputOf(event).termination !== null,
    terminationIsCancel: ({ context }) => context.termination?.kind === 'cancelled',
    terminationIsFailure: ({ context }) => context.termination?.kind === 'failed',
    timedOut: ({ context }) => context.interrupt === 'timeout',
    stalled: ({ context }) => context.interrupt === 'stall',
    stopped: ({ context }) => context.interrupt === 'stop',
    /** GR-2: the step just closed was one more mistake, and the count (this turn's and earlier ones') reached the limit. */
    reachedMistakeLimit: ({ context }) => mistakeLimitReached(context.mistakes, context.step, (guardrailsOf(context) ?? DEFAULT_GUARDRAILS).mistakeLimit),
    mistakeDecisionStops: ({ event }) => mistakeDecisionOf(event)?.action === 'stop',
    /** The token budget: the tokens reported so far plus this request would pass it (and the last call is not yet under way). */
    nextCallExceedsBudget: ({ context, event }) => {
      const max = guardrailsOf(context)?.maxTurnTokens ?? null;
      const prepared = preparedOf(event);
      return max !== null && !context.concluding && (prepared?.turnTokens ?? 0) + (prepared?.nextCallTokens ?? 0) > max;
    },
    concluding: ({ context }) => context.concluding,
    /** Issue 26: the resumed turn's last response still has calls without results: they run from the first of them. */
    resumesAtToolCalls: ({ event }) => {
      const at = beganOf(event)?.resumeAt;
      return at !== undefined && at.response !== null && at.toolIndex < at.response.toolCalls.length;
    },
    /** Issue 26: the resumed turn's last response is its answer (no calls): only its end was not stored. */
    resumesAnswered: ({ event }) => {
      const at = beganOf(event)?.resumeAt;
      return at !== undefined && at.response !== null && at.response.toolCalls.length === 0;
    },
    /** Issue 26: the resumed turn's model call was in flight (or its calls all have results): it is made again. */
    resumesAtModelCall: ({ event }) => beganOf(event)?.resumeAt !== undefined,
    /** Issue 25: the session's principal has spent its daily token budget: a new turn makes no model call. */
    principalBudgetSpent: ({ event }) => {
      const budget = beganOf(event)?.principalBudget;
      return budget !== null && budget !== undefined && budget.spent >= budget.limit;
    },
    isOverLine: ({ event }) => preparedOf(event)?.overLine === true,
    compactedThisCall: ({ context }) => context.compactedThisCall,
    isRetryableOverflow: ({ context, event }) => {
      const error = errorTraitsOf(event);
      return !context.overflowRetried && error?.kind === 'overflow' && error.semanticOutputProduced !== true;
    },
    checkpointNotInstalled: ({ event }) => errorTraitsOf(event)?.reloadRequired === true,
  },
  actions: {
    requestEffect: requestEffectAction<TurnContext, TurnEvent, TurnEffects>(),
    cancelEffect: cancelEffectAction<TurnContext, TurnEvent>(),
    abortEffect: abortEffectAction<TurnContext, TurnEvent>(),
    emitPhase: notProvided<[unknown, PhaseParams]>('turn', 'emitPhase'),
    /**
     * Supplied by the runtime (RL-5): starts the run of calls beginning at the current call, at most
     * the agent's bound at once, each after its `beforeToolDispatch` hooks (issue 30: per call). Each
     * call still goes through its own tool-call chart in provider order — validated, counted for the
     * doom loop, its hooks' outcome taken, its result written — and takes its run's result when it
     * reaches `executing`; a cancel aborts every run of the run.
     */
    startParallelReads: notProvided('turn', 'startParallelReads'),
    /** Supplied by the runtime (issue 30) as an `assign` of `approvalBatch`: the batch beginning at the current call. */
    openApprovalBatch: approvalBatchAction(() => 0),
    /** Supplied by the runtime (issue 30): starts the held call just cleared to run, within the agent's bound of calls at once. */
    startClearedCall: notProvided('turn', 'startClearedCall'),
    /** Issue 30: keep what the held call came to, and go on to the batch's next call. */
    recordClearance: assign(({ context, event }) => {
      const output = callOutputOf(event);
      return { cleared: { ...context.cleared, [output.toolCallId]: output.cleared! }, toolIndex: context.toolIndex + 1, loop: output.loop };
    }),
    /** Issue 30: every approval of the batch is in (or one ended the turn): back to its first call, whose chart now runs it or writes its result. */
    releaseApprovalBatch: assign({
      toolIndex: ({ context }) => context.approvalBatch!.start,
      approvalBatch: ({ context }) => ({ ...context.approvalBatch!, releasing: true }),
    }),
    /** Issue 30: an interrupt while the batch was cleared: every call of it, from the first, gets its result as a skipped call. */
    rewindToBatchStart: assign({ toolIndex: ({ context }) => context.approvalBatch!.start }),
    /** The draft dies with an interrupted or failed model call (RT-18). */
    discardDraft: notProvided('turn', 'discardDraft'),
    /** Supplied by the runtime: the `guardrail_triggered` update. */
    emitGuardrailTriggered: notProvided<[unknown, GuardrailTriggered]>('turn', 'emitGuardrailTriggered'),
    /**
     * Supplied by the runtime: cancels the sub-agents this turn started that still run. Taken with
     * every interrupt, so a cancel or stop reaches them at once, and again as the turn ends any way
     * but completed (a completed turn's children go on; their answers wait in the mailbox).
     */
    cancelChildren: notProvided('turn', 'cancelChildren'),
    /** The first interrupt wins: a cancel after the time limit struck does not turn `timed_out` into `cancelled`. */
    assignInterrupt: assign({
      interrupt: ({ context, event }) => context.interrupt ?? interruptOf(event),
    }),
    /** The interrupt reaches the running tool call: a cancel (saying whose) or a stop. */
    interruptToolCall: sendTo('toolCall', ({ event }) => toolCommandOf(event)),
    /**
     * A response ends its model call: keep it, run its tool calls from the first, and number the next
     * call (whose world-state sample starts at 1, not yet compacted for). Counting here rather than
     * when the next call starts saves a context update per step: `checking` only reads the count.
     */
    recordResponse: assign({
      response: ({ event }) => responseOf(event),
      toolIndex: 0,
      step: EMPTY_TALLY,
      modelCallIndex: ({ context }) => context.modelCallIndex + 1,
      sample: 1,
      compactedThisCall: false,
    }),
    /**
     * After a call: move on, carry the loop count, tally the result for the mistake breaker, remember
     * whether it ended the turn. After the response's last call the step is closed (GR-2): calls that
     * all failed are one more mistake in a row, any success resets. One `assign`, not two: each copies
     * the snapshot.
     */
    recordToolCall: assign(({ context, event }) => {
      const output = callOutputOf(event);
      const step = tallyResult(context.step, output.result);
      const last = context.toolIndex + 1 >= toolCallsOf(context).length;
      const batch = context.approvalBatch;
      const inBatch = batch !== null && context.toolIndex + 1 < batch.end;
      return {
        toolIndex: context.toolIndex + 1,
        loop: output.loop,
        step,
        mistakes: last ? mistakesAfter(context.mistakes, step) : context.mistakes,
        termination: output.termination ?? context.termination,
        // Past the batch's last call, the batch is over.
        approvalBatch: inBatch ? batch : null,
        cleared: inBatch ? context.cleared : NONE_CLEARED,
      };
    }),
    /** A tool-call actor that crashed (say, a tool schema that throws) ends the turn; its call still gets a result. */
    assignToolCallCrash: assign({
      termination: ({ event }) => {
        const error = callErrorOf(event);
        return {
          kind: 'failed',
          code: 'tool_call_crashed',
          message: `the tool call failed inside the runtime: ${messageOf(error)}`,
        };
      },
    }),
    /** Issue 26: the resumed turn takes up its stored response (if any) and the count of its model calls. */
    restoreResumePoint: assign(({ event }) => {
      const at = beganOf(event)!.resumeAt!;
      return { response: at.response, toolIndex: at.toolIndex, modelCallIndex: at.modelCallIndex };
    }),
    /** Re-sample right away (sample 2), so the resubmitted request still carries world state. */
    recordCompaction: assign({ compactedThisCall: true, sample: 2 }),
    markOverflowRetried: assign({ overflowRetried: true }),
    /** The token budget is spent: one last call, without tools, told to conclude. */
    startConcluding: assign({ concluding: true }),
    /** The guidance is written: the count starts again. */
    resetMistakes: assign({ mistakes: 0 }),
    // Approvals: the running call asks, the session records and announces the request, the user's answer goes back to the call.
    recordPermissionRequest: assign({ pendingPermission: ({ event }) => permissionRequestOf(event).toolCallId }),
    relayPermissionRequest: sendParent(({ context, event }) => {
      const request = permissionRequestOf(event);
      return { type: 'turn.permission_requested', turnId: context.turnId, toolCallId: request.toolCallId, name: request.name, paths: request.paths };
    }),
    forwardPermissionAnswer: sendTo('toolCall', ({ event }) => {
      const answer = permissionAnswerOf(event);
      return { type: 'permission.resolve', decision: answer.decision, principal: answer.principal } satisfies ToolCallCommand;
    }),
    clearPermissionRequest: assign({ pendingPermission: null }),
    relayPermissionSettled: sendParent(({ context }) => ({ type: 'turn.permission_settled', turnId: context.turnId })),
    // Waiting for the user is not a stall: the watchdog pauses until the answer.
    pauseWatchdog: sendTo(WATCHDOG, { type: 'watchdog.pause' }),
    resumeWatchdog: sendTo(WATCHDOG, { type: 'watchdog.resume' }),
    /** CP-4: the checkpoint is stored but not installed; the session refuses new turns until a reload. */
    requireReload: sendParent({ type: 'session.require_reload' }),
    // Why the turn ended, each in its own words.
    assignPersistenceFailure: assign({
      outcome: ({ event }) => failureOf(failedError(event), 'persistence_error'),
    }),
    assignAssemblyFailure: assign({
      outcome: ({ event }) => failureOf(failedError(event), 'model_protocol_error'),
    }),
    assignCompactionFailure: assign({
      outcome: ({ event }) => ({ ...failureOf(failedError(event), 'compaction_error'), code: 'compaction_error' as const }),
    }),
    /** The loop guard: a compaction that left the conversation over the line is not tried again. */
    assignStillOverLine: assign({
      outcome: { status: 'failed', code: 'compaction_error', message: 'the conversation is still over the auto-compact line after compacting' },
    }),
    assignModelFailure: assign({ outcome: ({ event }) => modelFailure(failedError(event)) }),
    assignMaxModelCalls: assign({
      outcome: ({ context }) => ({
        status: 'failed',
        code: 'max_model_calls',
        message: `the turn reached its limit of ${context.limits.maxModelCalls} model calls`,
      }),
    }),
    /** GR-2: the host's callback stopped the turn; its message is the final answer. */
    assignMistakeStop: assign({
      outcome: ({ event }) => ({ status: 'completed', finalText: stopMessageOf(event), stoppedBy: 'mistake_limit' }),
    }),
    assignCompleted: assign({ outcome: ({ context }) => ({ status: 'completed', finalText: context.response?.text ?? '' }) }),
    /** The last call under the token budget answered: the turn is over, and says why. */
    assignConcluded: assign({
      outcome: ({ context }) => ({ status: 'completed', finalText: context.response?.text ?? '', stoppedBy: 'token_budget' }),
    }),
    /** The last call under the token budget still asked for tools: none runs, each gets its result. */
    assignBudgetExhausted: assign({
      termination: ({ context }) => ({
        kind: 'failed',
        code: 'budget_exhausted',
        message: `the turn's token budget of ${guardrailsOf(context)?.maxTurnTokens ?? 0} is spent and the last call still asked for tools`,
      }),
    }),
    /** Issue 25: the principal's tokens for the day are spent; the message says when they come back. */
    assignPrincipalBudgetExhausted: assign({
      outcome: ({ event }) => {
        const budget = beganOf(event)?.principalBudget;
        const resets = budget ? new Date(budget.resetsAtMs).toISOString() : 'the next UTC day';
        return {
          status: 'failed',
          code: 'budget_exhausted',
          message: `the daily token budget of principal '${budget?.principal ?? ''}' (${budget?.limit ?? 0} tokens) is spent (${budget?.spent ?? 0} used today); it resets at ${resets}`,
        };
      },
    }),
    assignTerminationOutcome: assign({
      outcome: ({ context }) =>
        context.termination?.kind === 'failed'
          ? { status: 'failed', code: context.termination.code, message: context.termination.message }
          : { status: 'cancelled' },
    }),
    assignStalled: assign({ outcome: ({ context }) => ({ status: 'failed', code: 'stalled', message: STALLED_MESSAGE(context) }) }),
    assignStopped: assign({ outcome: STOPPED }),
    assignCancelled: assign({ outcome: { status: 'cancelled' } }),
    assignTimedOut: assign({
      outcome: ({ context }) => ({ status: 'timed_out', message: `the run passed its time limit of ${context.limits.runTimeoutMs ?? 0} ms` }),
    }),
  },
}).createMachine({
  id: 'turn',
  // Input fields listed one by one, not spread: spreading and then adding fields is slow in V8 (docs/architecture.md).
  context: ({ input }) => ({
    sessionId: input.sessionId,
    turnId: input.turnId,
    limits: input.limits,
    resume: input.resume ?? null,
    modelCallIndex: 1,
    sample: 1,
    compactedThisCall: false,
    overflowRetried: false,
    response: null,
    toolIndex: 0,
    // GR-2a: the trackers are the session's, so the turn starts where the last one left them (the
    // loop's only under a profile that counts it across turns).
    loop: input.limits.guardrails?.loopAcrossTurns ? input.trackers.loop : FRESH_TRACKER,
    step: EMPTY_TALLY,
    mistakes: input.trackers.mistakes,
    concluding: false,
    interrupt: null,
    termination: null,
    pendingPermission: null,
    approvalBatch: null,
    cleared: NONE_CLEARED,
    outcome: null,
  }),
  // The no-progress watchdog lives as long as the turn; it is off unless the agent has a `stallTimeoutMs`.
  invoke: {
    id: WATCHDOG,
    src: 'stallWatchdog',
    input: ({ context }) => ({ timeoutMs: guardrailsOf(context)?.stallTimeoutMs ?? null }),
  },
  initial: 'starting',
  states: {
    starting: {
      entry: [
        { type: 'emitPhase', params: { phase: 'starting' } },
        { type: 'requestEffect', params: ({ context }) => ({ name: 'beginTurn', input: { sessionId: context.sessionId, turnId: context.turnId, resume: context.resume } }) },
      ],
      on: {
        'effect.done': [
          // Issue 25: the principal's daily token budget is spent: the turn, stored, ends before any model call.
          { guard: 'principalBudgetSpent', target: 'failed', actions: 'assignPrincipalBudgetExhausted' },
          // Issue 26: a resumed turn goes on where storage has it: its remaining calls (each still gets
          // exactly one result; an interrupt that came meanwhile skips them), or its model call again.
          { guard: and(['resumesAtToolCalls', 'interrupted']), target: 'skipping_remaining', actions: 'restoreResumePoint' },
          { guard: 'resumesAtToolCalls', target: 'running_tools', actions: 'restoreResumePoint' },
          { guard: 'resumesAnswered', target: 'completed', actions: ['restoreResumePoint', 'assignCompleted'] },
          { guard: 'resumesAtModelCall', target: 'running_model', actions: 'restoreResumePoint' },
          { target: 'running_model' },
        ],
        'effect.failed': { target: 'failed', actions: 'assignPersistenceFailure' },
        'turn.interrupt': { actions: ['assignInterrupt', 'cancelChildren'] },
      },
    },
    running_model: {
      initial: 'checking',
      states: {
        checking: {
          always: [
            { guard: 'interrupted', target: '#turn.interrupted' },
            { guard: 'reachedMaxModelCalls', target: '#turn.failed', actions: 'assignMaxModelCalls' },
            // GR-2: the mistake breaker tripped; the agent's `onMistakeLimit` decides.
            { guard: 'reachedMistakeLimit', target: 'consulting' },
            // The checkpoint before a model call: a hold takes effect here, with everything so far stored.
            { guard: 'holdRequested', target: 'holding' },
            { guard: 'mailboxHasMessages', target: 'draining_mailbox' },
            { target: 'preparing' },
          ],
        },
        /** GR-2: the host's callback, invoked as an effect: it may be cancelled, and what it writes is written before the turn ends. */
        consulting: {
          entry: [
            { type: 'emitGuardrailTriggered', params: ({ context }) => ({ rule: 'mistake_limit', level: 'hard', count: context.mistakes }) },
            {
              type: 'requestEffect',
              params: ({ context }) => ({
                name: 'consultMistakeLimit',
                input: { sessionId: context.sessionId, turnId: context.turnId, count: context.mistakes, lastErrors: context.step.errors },
              }),
            },
          ],
          on: {
            'effect.done': [
              { guard: 'interrupted', target: '#turn.interrupted' },
              { guard: 'mistakeDecisionStops', target: '#turn.completed', actions: 'assignMistakeStop' },
              // The guidance is written: the count starts again, and the loop goes on.
              { target: 'checking', actions: 'resetMistakes' },
            ],
            'effect.failed': [
              { guard: 'interrupted', target: '#turn.interrupted' },
              { target: '#turn.failed', actions: 'assignPersistenceFailure' },
            ],
            // The callback's signal aborts and its answer is no longer awaited; a write already under way finishes first.
            'turn.interrupt': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
          },
        },
        holding: {
          entry: [
            { type: 'emitPhase', params: { phase: 'paused' } },
            { type: 'requestEffect', params: ({ context }) => ({ name: 'awaitRelease', input: effectInput(context) }) },
          ],
          on: {
            'effect.done': { target: 'checking' },
            'turn.interrupt': { target: '#turn.interrupted', actions: ['cancelEffect', 'assignInterrupt'] },
          },
        },
        draining_mailbox: {
          entry: { type: 'requestEffect', params: ({ context }) => ({ name: 'drainMailbox', input: effectInput(context) }) },
          on: {
            'effect.done': [
              { guard: 'interrupted', target: '#turn.interrupted' },
              { target: 'preparing' },
            ],
            'effect.failed': { target: '#turn.failed', actions: 'assignPersistenceFailure' },
            'turn.interrupt': { actions: ['assignInterrupt', 'cancelChildren'] },
          },
        },
        /** RT-10: sample world state (CW-2), then build this call's request once (CW-1), pruning at the line. */
        preparing: {
          entry: {
            type: 'requestEffect',
            params: ({ context }) => ({
              name: 'prepareRequest',
              input: { sessionId: context.sessionId, turnId: context.turnId, modelCallIndex: context.modelCallIndex, sample: context.sample },
            }),
          },
          on: {
            'effect.done': [
              { guard: 'interrupted', target: '#turn.interrupted' },
              // The loop guard: a compaction that left the conversation over the line is not tried again.
              { guard: and(['isOverLine', 'compactedThisCall']), target: '#turn.failed', actions: 'assignStillOverLine' },
              { guard: 'isOverLine', target: 'compacting' },
              // The token budget would be passed: one last call, without tools, told to conclude.
              {
                guard: 'nextCallExceedsBudget',
                target: 'calling',
                actions: [
                  'startConcluding',
                  { type: 'emitGuardrailTriggered', params: ({ event }) => ({ rule: 'token_budget', level: 'soft', count: preparedOf(event)?.turnTokens ?? 0 }) },
                ],
              },
              { target: 'calling' },
            ],
            'effect.failed': [
              // The interrupt aborted the sampling: a read it cut short is no failure of the world.
              { guard: 'interrupted', target: '#turn.interrupted' },
              // A world-state source that cannot be read fails with its section's code, before any model call.
              { target: '#turn.failed', actions: 'assignAssemblyFailure' },
            ],
            // Abort the sampling's reads, and wait for its reply: a world-state write under way finishes first.
            'turn.interrupt': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
          },
        },
        compacting: {
          entry: [
            { type: 'emitPhase', params: { phase: 'compacting' } },
            { type: 'requestEffect', params: ({ context }) => ({ name: 'compact', input: effectInput(context) }) },
          ],
          on: {
            'effect.done': [
              { guard: 'interrupted', target: '#turn.interrupted' },
              // Re-sample right away (sample 2) so the resubmitted request still carries world state.
              { target: 'preparing', actions: 'recordCompaction' },
            ],
            'effect.failed': [
              // CP-4: the checkpoint is stored but not installed; new turns are refused until a reload.
              { guard: 'checkpointNotInstalled', target: '#turn.failed', actions: ['assignCompactionFailure', 'requireReload'] },
              // The interrupt aborted the summary call: the turn ends as the interrupt says, not as a failed compaction.
              { guard: 'interrupted', target: '#turn.interrupted' },
              { target: '#turn.failed', actions: 'assignCompactionFailure' },
            ],
            // Abort the summary call, and wait for the reply: a checkpoint being stored is stored or not, never half.
            'turn.interrupt': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
          },
        },
        calling: {
          entry: [
            { type: 'emitPhase', params: { phase: 'running_model' } },
            {
              type: 'requestEffect',
              params: ({ context }) => ({
                name: 'callModel',
                input: { sessionId: context.sessionId, turnId: context.turnId, modelCallIndex: context.modelCallIndex, concluding: context.concluding },
              }),
            },
          ],
          on: {
            'effect.done': { target: 'writing_response', actions: 'recordResponse' },
            'effect.failed': [
              // An explicit overflow before any output: compact and resubmit, once (RT-10, CP-1).
              { guard: 'isRetryableOverflow', target: 'compacting', actions: ['discardDraft', 'markOverflowRetried'] },
              { target: '#turn.failed', actions: ['discardDraft', 'assignModelFailure'] },
            ],
            // Cancelling the request aborts the model call's signal: a waiting model call is cancelled.
            'turn.interrupt': { target: '#turn.interrupted', actions: ['cancelEffect', 'discardDraft', 'assignInterrupt'] },
          },
        },
        writing_response: {
          entry: {
            type: 'requestEffect',
            params: ({ context }) => ({
              name: 'writeAssistant',
              input: { sessionId: context.sessionId, turnId: context.turnId, response: context.response! },
            }),
          },
          on: {
            'effect.done': [
              // The last call under the token budget answered: the turn is over, and says why.
              { guard: and(['responseHasNoToolCalls', 'concluding']), target: '#turn.completed', actions: 'assignConcluded' },
              { guard: 'responseHasNoToolCalls', target: '#turn.completed', actions: 'assignCompleted' },
              // The calls are stored: each still needs exactly one result before the turn ends (RT-12).
              { guard: 'interrupted', target: '#turn.skipping_remaining' },
              // The last call under the token budget still asked for tools: none runs, each gets its result.
              { guard: 'concluding', target: '#turn.skipping_remaining', actions: 'assignBudgetExhausted' },
              // Issue 30: the response opens with calls whose approvals come first, then run side by side.
              { guard: 'opensApprovalBatch', target: '#turn.running_tools', actions: 'openApprovalBatch' },
              // RL-5: the response opens with reads that may run side by side: start them, then go call by call.
              { guard: 'callsReadInParallel', target: '#turn.running_tools', actions: 'startParallelReads' },
              { target: '#turn.running_tools' },
            ],
            'effect.failed': { target: '#turn.failed', actions: ['discardDraft', 'assignPersistenceFailure'] },
            'turn.interrupt': { actions: ['assignInterrupt', 'cancelChildren'] },
          },
        },
      },
    },
    running_tools: {
      entry: { type: 'emitPhase', params: { phase: 'running_tools' } },
      // The response has calls and no interrupt arrived while it was written (both checked on the way in).
      initial: 'tool_call',
      states: {
        tool_call: {
          invoke: {
            id: 'toolCall',
            src: 'toolCall',
            input: ({ context }) => {
              const call = toolCallsOf(context)[context.toolIndex]!;
              const batch = context.approvalBatch;
              return {
                sessionId: context.sessionId,
                turnId: context.turnId,
                call,
                loop: context.loop,
                loopRules: loopRulesOf(context.limits),
                // Issue 30: in an approval batch, held before it runs; once the batch is released, it goes on from what it came to.
                holdBeforeRun: batch !== null && !batch.releasing,
                cleared: batch?.releasing === true ? (context.cleared[call.id] ?? null) : null,
              };
            },
            // What comes after a call, decided on its result (guards see the context before it is recorded).
            onDone: [
              // Issue 30: a call of an approval batch, held: a cancel or stop meanwhile skips the whole batch (what already started says what it came to).
              { guard: and(['callHeld', 'interrupted']), target: '#turn.skipping_remaining', actions: ['recordClearance', 'rewindToBatchStart'] },
              // The batch's last approval is in, or one ended the turn: its calls' charts take up their runs, in provider order.
              { guard: and(['callHeld', 'clearanceEndsBatch']), target: 'tool_call', reenter: true, actions: ['recordClearance', 'startClearedCall', 'releaseApprovalBatch'] },
              { guard: 'callHeld', target: 'tool_call', reenter: true, actions: ['recordClearance', 'startClearedCall'] },
              // The call ended the turn (a cancel, a stop, a denial, a doom loop, a failed write).
              { guard: 'callEndedTurn', target: '#turn.skipping_remaining', actions: 'recordToolCall' },
              // A cancel or stop arrived while the call ran: the remaining calls still get their results.
              { guard: 'interrupted', target: '#turn.skipping_remaining', actions: 'recordToolCall' },
              // That was the response's last call: back to the model, the step counted for the mistake breaker.
              { guard: 'isLastToolCall', target: '#turn.running_model', actions: 'recordToolCall' },
              // Issue 30: the next call is one of the released batch; or the next calls open an approval batch.
              { guard: 'nextInReleasedBatch', target: 'tool_call', reenter: true, actions: 'recordToolCall' },
              { guard: 'nextOpensApprovalBatch', target: 'tool_call', reenter: true, actions: ['recordToolCall', 'openApprovalBatch'] },
              // The next calls are a run of reads that may run side by side (RL-5): start them, then the next call.
              { guard: 'nextCallsReadInParallel', target: 'tool_call', reenter: true, actions: ['recordToolCall', 'startParallelReads'] },
              // The next call of the same response, in provider order: a new tool-call actor.
              { target: 'tool_call', reenter: true, actions: 'recordToolCall' },
            ],
            // A tool-call actor that crashed (say, a tool schema that throws) still leaves every call with one result (RT-12):
            // while a batch is being cleared, from the batch's first call (the calls held before it have none yet).
            onError: [
              { guard: 'clearingBatch', target: '#turn.skipping_remaining', actions: ['assignToolCallCrash', 'rewindToBatchStart'] },
              { target: '#turn.skipping_remaining', actions: 'assignToolCallCrash' },
            ],
          },
          initial: 'executing',
          states: {
            executing: {
              on: {
                'tool.permission_requested': { target: 'waiting_permission', actions: ['recordPermissionRequest', 'relayPermissionRequest'] },
              },
            },
            waiting_permission: {
              // Waiting for the user is not a stall: the watchdog pauses until the answer.
              entry: [{ type: 'emitPhase', params: { phase: 'waiting_permission' } }, 'pauseWatchdog'],
              exit: 'resumeWatchdog',
              on: {
                'tool.permission_settled': {
                  target: 'executing',
                  actions: ['clearPermissionRequest', 'relayPermissionSettled', { type: 'emitPhase', params: { phase: 'running_tools' } }],
                },
                'turn.resolve_permission': { guard: 'isPendingPermission', actions: 'forwardPermissionAnswer' },
              },
            },
          },
          on: {
            'turn.interrupt': { actions: ['assignInterrupt', 'cancelChildren', 'interruptToolCall'] },
          },
        },
      },
    },
    skipping_remaining: {
      entry: {
        type: 'requestEffect',
        params: ({ context }) => ({
          name: 'skipToolCalls',
          input: { sessionId: context.sessionId, turnId: context.turnId, calls: toolCallsOf(context).slice(context.toolIndex), opened: Object.keys(context.cleared) },
        }),
      },
      on: {
        'effect.done': [
          { guard: 'terminationIsFailure', target: 'failed', actions: 'assignTerminationOutcome' },
          // The watchdog cancelled the running call: the turn failed for want of progress.
          { guard: 'stalled', target: 'failed', actions: 'assignStalled' },
          // The time limit cancelled the running call: the turn timed out rather than being cancelled.
          { guard: 'timedOut', target: 'timed_out' },
          { guard: 'terminationIsCancel', target: 'cancelled' },
          { target: 'interrupted' },
        ],
        'effect.failed': { target: 'failed', actions: 'assignPersistenceFailure' },
      },
    },
    /** A cancel, time limit or stop that arrived outside a tool call: decide which terminal state it means. */
    interrupted: {
      always: [
        { guard: 'stopped', target: 'failed', actions: 'assignStopped' },
        { guard: 'stalled', target: 'failed', actions: 'assignStalled' },
        { guard: 'timedOut', target: 'timed_out' },
        { target: 'cancelled' },
      ],
    },
    completed: { type: 'final', entry: { type: 'emitPhase', params: { phase: 'completed' } } },
    failed: { type: 'final', entry: ['cancelChildren', { type: 'emitPhase', params: { phase: 'failed' } }] },
    cancelled: { type: 'final', entry: ['cancelChildren', 'assignCancelled', { type: 'emitPhase', params: { phase: 'cancelled' } }] },
    timed_out: { type: 'final', entry: ['cancelChildren', 'assignTimedOut', { type: 'emitPhase', params: { phase: 'timed_out' } }] },
  },
  output: ({ context }) => ({ outcome: context.outcome ?? STOPPED, trackers: { loop: context.loop, mistakes: context.mistakes } }),
});

/**
 * How the runtime supplies `openApprovalBatch` (issue 30): an `assign` of the batch beginning at the
 * current call, `length` calls long, with nothing cleared yet.
 */
export function approvalBatchAction(length: (context: TurnContext) => number) {
  return assign<TurnContext, TurnEvent, undefined, TurnEvent, never>({
    approvalBatch: ({ context }) => ({ start: context.toolIndex, end: context.toolIndex + length(context), releasing: false }),
    cleared: NONE_CLEARED,
  });
}

/** The tool calls of the stored response; none before the first response. */
function toolCallsOf(context: TurnContext): ToolCallPart[] {
  return context.response?.toolCalls ?? [];
}

function effectInput(context: TurnContext): TurnEffectInput {
  return { sessionId: context.sessionId, turnId: context.turnId };
}
