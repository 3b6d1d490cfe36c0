import { and, assign, sendParent, sendTo, setup } from 'xstate';
import type { ToolCallPart } from '../src/protocol/messages.js';
import type { ModelResponse } from '../src/protocol/model.js';
import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { ToolCallOutput, TurnTermination } from '../src/protocol/tool-result.js';
import type { PermissionDecision, TurnPhase } from '../src/protocol/updates.js';
import { toolCallMachine, type GuardrailTriggered } from './tool-call.machine.js';
import { stallWatchdogMachine, WATCHDOG } from './stall-watchdog.machine.js';
import {
  DEFAULT_GUARDRAILS,
  EMPTY_TALLY,
  FRESH_TRACKER,
  loopRulesOf,
  mistakeLimitReached,
  mistakesAfter,
  tallyResult,
  type GuardrailLimits,
  type GuardrailTrackers,
  type LoopTracker,
  type StepTally,
} from './guardrails.js';
import { notProvided } from './not-provided.js';
import { failureOf } from './failure.js';
import { abortEffectAction, cancelEffectAction, doneOutput, failedError, requestEffectAction, type EffectErrorTraits, type EffectReply } from './effect-port.js';

/**
 * One user turn: the agent loop of RT-10 as a chart.
 * starting → running_model { checking → (consulting →)? holding? → draining_mailbox? → preparing →
 * (compacting → preparing →) calling → writing_response } → completed | running_tools { tool_call
 * (one actor per call, in order) } → running_model … ; a call that ends the turn, or an interrupt,
 * → skipping_remaining. The guardrails (GR-1…GR-3) are its guards and transitions: the mistake
 * breaker in `checking` → `consulting`, the token budget in `preparing` and `writing_response`,
 * the no-progress watchdog an invoked chart of its own that sends `turn.timeout { limit: 'stall' }`.
 * `holding` is the checkpoint a paused task waits at (LC-1, LC-4).
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
}

/** How the turn ended, and the trackers it hands back to its session (GR-2a). */
export interface TurnOutput {
  outcome: TurnOutcome;
  trackers: GuardrailTrackers;
}

/** What ended the turn early: a user cancel, the run's time limit (RL-3), no progress (the watchdog), or the session stopping. */
export type Interrupt = 'cancel' | 'timeout' | 'stall' | 'stop' | null;

/** The trackers of the input live on as `loop` and `mistakes`, which the turn moves. */
export interface TurnContext extends Omit<TurnInput, 'trackers'> {
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
}

export type TurnEvent =
  | { type: 'turn.cancel' }
  /** The run's time limit (RL-3), or `limit: 'stall'` from the no-progress watchdog. */
  | { type: 'turn.timeout'; limit?: 'run' | 'stall' }
  | { type: 'turn.stop' }
  | { type: 'turn.resolve_permission'; toolCallId: string; decision: PermissionDecision }
  | { type: 'tool.permission_requested'; toolCallId: string; name: string; paths: string[] }
  | { type: 'tool.permission_settled'; toolCallId: string }
  | EffectReply;

export interface TurnEffectInput {
  sessionId: string;
  turnId: string;
}

export interface CallModelInput extends TurnEffectInput {
  modelCallIndex: number;
  /** The token budget is spent: call without tools, told to conclude. */
  concluding?: boolean;
}

/** What `prepareRequest` reports: over the compaction line, and the numbers the token budget is judged on. */
export interface PreparedOutput {
  overLine: boolean;
  /** Input plus output tokens the turn's model calls reported so far. */
  turnTokens: number;
  /** The estimated input of the request just prepared. */
  nextCallTokens: number;
}

export interface MistakeLimitInput extends TurnEffectInput {
  count: number;
  lastErrors: string[];
}

/** What the host's `onMistakeLimit` decided; the effect has written the guidance or the final text. */
export type MistakeDecision = { action: 'continue' } | { action: 'stop'; message: string };

export interface WriteAssistantInput extends TurnEffectInput {
  response: ModelResponse;
}

export interface SkipCallsInput extends TurnEffectInput {
  calls: ToolCallPart[];
}

export interface SampleInput extends CallModelInput {
  sample: number;
}

/** The effects the turn asks the runtime for, with their inputs and outputs. */
export type TurnEffects = {
  /**
   * Samples the four world-state sections and appends the changed ones (CW-2), then prepares this
   * call's request — pruning once if it reaches the line — and says whether it is still over (CW-7).
   */
  prepareRequest: { input: SampleInput; output: PreparedOutput };
  /** Summarizes, stores a checkpoint and installs the compacted conversation (CP-1…CP-4). */
  compact: { input: TurnEffectInput; output: { compactionId: string } };
  /** Writes the turn row and opening messages, appends them, resolves the system context (RT-10). */
  beginTurn: { input: TurnEffectInput; output: void };
  /** Writes and appends every agent message waiting in the mailbox (RT-4). */
  drainMailbox: { input: TurnEffectInput; output: void };
  /** Streams the model with the prepared request (deltas go straight to the live stream). */
  callModel: { input: CallModelInput; output: ModelResponse };
  /** Writes the assistant message, appends it, clears the draft (RT-18). */
  writeAssistant: { input: WriteAssistantInput; output: void };
  /** RT-13: `cancelled` results, in order, for calls that were never executed (a call that already has its result is left alone). */
  skipToolCalls: { input: SkipCallsInput; output: void };
  /**
   * GR-2: asks the agent's `onMistakeLimit`, then writes its guidance as a user-side note or its
   * message as the final answer; without a callback it stops with an explanatory message (seed 003).
   * A callback that throws or answers nonsense: `mistake_limit`.
   */
  consultMistakeLimit: { input: MistakeLimitInput; output: MistakeDecision };
  /** Waits until the session's hold is released (a paused task resumes). */
  awaitRelease: { input: TurnEffectInput; output: void };
};

/** A model-port error maps to RT-9's codes: `protocol` → model_protocol_error, anything else → model_error. */
function modelFailure(error: unknown): TurnOutcome {
  const kind = (error as { kind?: unknown } | null)?.kind;
  if (kind === 'protocol') return failureOf(error, 'model_protocol_error');
  return failureOf(error, 'model_error');
}

const STOPPED: TurnOutcome = { status: 'failed', code: 'actor_stopped', message: 'the session stopped during the turn' };

function interruptOf(event: TurnEvent): Exclude<Interrupt, null> {
  if (event.type === 'turn.stop') return 'stop';
  if (event.type === 'turn.timeout') return event.limit === 'stall' ? 'stall' : 'timeout';
  return 'cancel';
}

/**
 * After a call: move on, carry the loop count, tally the result for the mistake breaker, remember
 * whether it ended the turn. After the response's last call the step is closed (GR-2): calls that
 * all failed are one more mistake in a row, any success resets. One `assign`, not two: each copies
 * the snapshot.
 */
const recordToolCall = assign<TurnContext, { type: string; output: ToolCallOutput }, undefined, TurnEvent, never>(({ context, event }) => {
  const step = tallyResult(context.step, event.output.result);
  const last = context.toolIndex + 1 >= toolCallsOf(context).length;
  return {
    toolIndex: context.toolIndex + 1,
    loop: event.output.loop,
    step,
    mistakes: last ? mistakesAfter(context.mistakes, step) : context.mistakes,
    termination: event.output.termination ?? context.termination,
  };
});

const guardrailsOf = (context: TurnContext) => context.limits.guardrails;
// One typed reader per reply the turn waits for.
const preparedOf = (event: TurnEvent) => doneOutput<Partial<PreparedOutput>>(event);
const responseOf = (event: TurnEvent) => doneOutput<ModelResponse>(event)!;
const mistakeDecisionOf = (event: TurnEvent) => doneOutput<MistakeDecision>(event);
const errorTraitsOf = (event: TurnEvent) => failedError(event) as EffectErrorTraits;
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
    mailboxHasMessages: notProvided('turn', 'mailboxHasMessages') as (_: { context: TurnContext }) => boolean,
    /** Supplied by the runtime: the session is asked to hold its turns at their next checkpoint (a task pausing). */
    holdRequested: notProvided('turn', 'holdRequested') as (_: { context: TurnContext }) => boolean,
    /**
     * Supplied by the runtime (RL-5): with parallel tool calls on, the calls from `toolIndex` (or the
     * one after it, for `nextCallsReadInParallel`) begin a run of at least two reads that need no
     * approval and have not been started yet.
     */
    callsReadInParallel: notProvided('turn', 'callsReadInParallel') as (_: { context: TurnContext }) => boolean,
    nextCallsReadInParallel: notProvided('turn', 'nextCallsReadInParallel') as (_: { context: TurnContext }) => boolean,
    interrupted: ({ context }) => context.interrupt !== null,
    reachedMaxModelCalls: ({ context }) => context.modelCallIndex > context.limits.maxModelCalls,
    responseHasNoToolCalls: ({ context }) => (context.response?.toolCalls.length ?? 0) === 0,
    isLastToolCall: ({ context }) => context.toolIndex + 1 >= toolCallsOf(context).length,
    isPendingPermission: ({ context, event }) =>
      event.type === 'turn.resolve_permission' && context.pendingPermission === event.toolCallId,
    terminationIsCancel: ({ context }) => context.termination?.kind === 'cancelled',
    terminationIsFailure: ({ context }) => context.termination?.kind === 'failed',
    timedOut: ({ context }) => context.interrupt === 'timeout',
    stalled: ({ context }) => context.interrupt === 'stall',
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
    emitPhase: notProvided('turn', 'emitPhase') as (_: unknown, params: { phase: TurnPhase }) => void,
    /**
     * Supplied by the runtime (RL-5): starts the run of reads beginning at the current call, at most
     * the agent's bound at once. Each call still goes through its own tool-call chart in provider
     * order — validated, counted for the doom loop, its result written — and takes its read's result
     * when it reaches `executing`; a cancel aborts every read of the run.
     */
    startParallelReads: notProvided('turn', 'startParallelReads'),
    /** The draft dies with an interrupted or failed model call (RT-18). */
    discardDraft: notProvided('turn', 'discardDraft'),
    /** Supplied by the runtime: the `guardrail_triggered` update. */
    emitGuardrailTriggered: notProvided('turn', 'emitGuardrailTriggered') as (_: unknown, params: GuardrailTriggered) => void,
    /**
     * Supplied by the runtime: cancels the sub-agents this turn started that still run. Taken with
     * every interrupt, so a cancel or stop reaches them at once, and again as the turn ends any way
     * but completed (a completed turn's children go on; their answers wait in the mailbox).
     */
    cancelChildren: notProvided('turn', 'cancelChildren'),
    assignPersistenceFailure: assign({
      outcome: ({ event }) => failureOf(failedError(event), 'persistence_error'),
    }),
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
    assignAssemblyFailure: assign({
      outcome: ({ event }) => failureOf(failedError(event), 'model_protocol_error'),
    }),
    assignCompactionFailure: assign({
      outcome: ({ event }) => ({ ...failureOf(failedError(event), 'compaction_error'), code: 'compaction_error' as const }),
    }),
    assignTerminationOutcome: assign({
      outcome: ({ context }) =>
        context.termination?.kind === 'failed'
          ? { status: 'failed', code: context.termination.code, message: context.termination.message }
          : { status: 'cancelled' },
    }),
    assignStalled: assign({ outcome: ({ context }) => ({ status: 'failed', code: 'stalled', message: STALLED_MESSAGE(context) }) }),
    /** The first interrupt wins: a cancel after the time limit struck does not turn `timed_out` into `cancelled`. */
    assignInterrupt: assign({
      interrupt: ({ context, event }) => context.interrupt ?? interruptOf(event),
    }),
  },
}).createMachine({
  id: 'turn',
  // Input fields listed one by one, not spread: spreading and then adding fields is slow in V8 (docs/architecture.md).
  context: ({ input }) => ({
    sessionId: input.sessionId,
    turnId: input.turnId,
    limits: input.limits,
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
        { type: 'requestEffect', params: ({ context }) => ({ name: 'beginTurn', input: effectInput(context) }) },
      ],
      on: {
        'effect.done': { target: 'running_model' },
        'effect.failed': { target: 'failed', actions: 'assignPersistenceFailure' },
        'turn.cancel': { actions: ['assignInterrupt', 'cancelChildren'] },
        'turn.timeout': { actions: ['assignInterrupt', 'cancelChildren'] },
        'turn.stop': { actions: ['assignInterrupt', 'cancelChildren'] },
      },
    },
    running_model: {
      initial: 'checking',
      states: {
        checking: {
          always: [
            { guard: 'interrupted', target: '#turn.interrupted' },
            {
              guard: 'reachedMaxModelCalls',
              target: '#turn.failed',
              actions: assign({
                outcome: ({ context }) => ({
                  status: 'failed',
                  code: 'max_model_calls',
                  message: `the turn reached its limit of ${context.limits.maxModelCalls} model calls`,
                }),
              }),
            },
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
              {
                guard: 'mistakeDecisionStops',
                target: '#turn.completed',
                actions: assign({
                  outcome: ({ event }) => ({
                    status: 'completed',
                    finalText: stopMessageOf(event),
                    stoppedBy: 'mistake_limit',
                  }),
                }),
              },
              // The guidance is written: the count starts again, and the loop goes on.
              { target: 'checking', actions: assign({ mistakes: 0 }) },
            ],
            'effect.failed': [
              { guard: 'interrupted', target: '#turn.interrupted' },
              { target: '#turn.failed', actions: assign({ outcome: ({ event }) => failureOf(event.error, 'persistence_error') }) },
            ],
            // The callback's signal aborts and its answer is no longer awaited; a write already under way finishes first.
            'turn.cancel': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
            'turn.timeout': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
            'turn.stop': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
          },
        },
        holding: {
          entry: [
            { type: 'emitPhase', params: { phase: 'paused' } },
            { type: 'requestEffect', params: ({ context }) => ({ name: 'awaitRelease', input: effectInput(context) }) },
          ],
          on: {
            'effect.done': { target: 'checking' },
            'turn.cancel': { target: '#turn.interrupted', actions: ['cancelEffect', 'assignInterrupt'] },
            'turn.timeout': { target: '#turn.interrupted', actions: ['cancelEffect', 'assignInterrupt'] },
            'turn.stop': { target: '#turn.interrupted', actions: ['cancelEffect', 'assignInterrupt'] },
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
            'turn.cancel': { actions: ['assignInterrupt', 'cancelChildren'] },
            'turn.timeout': { actions: ['assignInterrupt', 'cancelChildren'] },
            'turn.stop': { actions: ['assignInterrupt', 'cancelChildren'] },
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
              {
                // The loop guard: a compaction that left the conversation over the line is not tried again.
                guard: and(['isOverLine', 'compactedThisCall']),
                target: '#turn.failed',
                actions: assign({
                  outcome: {
                    status: 'failed',
                    code: 'compaction_error',
                    message: 'the conversation is still over the auto-compact line after compacting',
                  },
                }),
              },
              { guard: 'isOverLine', target: 'compacting' },
              // The token budget would be passed: one last call, without tools, told to conclude.
              {
                guard: 'nextCallExceedsBudget',
                target: 'calling',
                actions: [
                  assign({ concluding: true }),
                  {
                    type: 'emitGuardrailTriggered',
                    params: ({ event }) => ({ rule: 'token_budget', level: 'soft', count: preparedOf(event)?.turnTokens ?? 0 }),
                  },
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
            'turn.cancel': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
            'turn.timeout': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
            'turn.stop': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
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
              { target: 'preparing', actions: assign({ compactedThisCall: true, sample: 2 }) },
            ],
            'effect.failed': [
              {
                // CP-4: the checkpoint is stored but not installed; new turns are refused until a reload.
                guard: 'checkpointNotInstalled',
                target: '#turn.failed',
                actions: ['assignCompactionFailure', sendParent({ type: 'session.require_reload' })],
              },
              // The interrupt aborted the summary call: the turn ends as the interrupt says, not as a failed compaction.
              { guard: 'interrupted', target: '#turn.interrupted' },
              { target: '#turn.failed', actions: 'assignCompactionFailure' },
            ],
            // Abort the summary call, and wait for the reply: a checkpoint being stored is stored or not, never half.
            'turn.cancel': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
            'turn.timeout': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
            'turn.stop': { actions: ['assignInterrupt', 'cancelChildren', 'abortEffect'] },
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
              {
                // An explicit overflow before any output: compact and resubmit, once (RT-10, CP-1).
                guard: 'isRetryableOverflow',
                target: 'compacting',
                actions: ['discardDraft', assign({ overflowRetried: true })],
              },
              {
                target: '#turn.failed',
                actions: ['discardDraft', assign({ outcome: ({ event }) => modelFailure(failedError(event)) })],
              },
            ],
            // Cancelling the request aborts the model call's signal: a waiting model call is cancelled.
            'turn.cancel': { target: '#turn.interrupted', actions: ['cancelEffect', 'discardDraft', 'assignInterrupt'] },
            'turn.timeout': { target: '#turn.interrupted', actions: ['cancelEffect', 'discardDraft', 'assignInterrupt'] },
            'turn.stop': { target: '#turn.interrupted', actions: ['cancelEffect', 'discardDraft', 'assignInterrupt'] },
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
              {
                // The last call under the token budget answered: the turn is over, and says why.
                guard: and(['responseHasNoToolCalls', 'concluding']),
                target: '#turn.completed',
                actions: assign({ outcome: ({ context }) => ({ status: 'completed', finalText: context.response?.text ?? '', stoppedBy: 'token_budget' }) }),
              },
              {
                guard: 'responseHasNoToolCalls',
                target: '#turn.completed',
                actions: assign({ outcome: ({ context }) => ({ status: 'completed', finalText: context.response?.text ?? '' }) }),
              },
              {
                // The calls are stored: each still needs exactly one result before the turn ends (RT-12).
                guard: 'interrupted',
                target: '#turn.skipping_remaining',
              },
              {
                // The last call under the token budget still asked for tools: none runs, each gets its result.
                guard: 'concluding',
                target: '#turn.skipping_remaining',
                actions: assign({
                  termination: ({ context }) => ({
                    kind: 'failed',
                    code: 'budget_exhausted',
                    message: `the turn's token budget of ${guardrailsOf(context)?.maxTurnTokens ?? 0} is spent and the last call still asked for tools`,
                  }),
                }),
              },
              // RL-5: the response opens with reads that may run side by side: start them, then go call by call.
              { guard: 'callsReadInParallel', target: '#turn.running_tools', actions: 'startParallelReads' },
              { target: '#turn.running_tools' },
            ],
            'effect.failed': { target: '#turn.failed', actions: ['discardDraft', 'assignPersistenceFailure'] },
            'turn.cancel': { actions: ['assignInterrupt', 'cancelChildren'] },
            'turn.timeout': { actions: ['assignInterrupt', 'cancelChildren'] },
            'turn.stop': { actions: ['assignInterrupt', 'cancelChildren'] },
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
            input: ({ context }) => ({
              sessionId: context.sessionId,
              turnId: context.turnId,
              call: toolCallsOf(context)[context.toolIndex]!,
              loop: context.loop,
              loopRules: loopRulesOf(context.limits),
            }),
            // What comes after a call, decided on its result (guards see the context before it is recorded).
            onDone: [
              // The call ended the turn (a cancel, a stop, a denial, a doom loop, a failed write).
              { guard: ({ event }) => event.output.termination !== null, target: '#turn.skipping_remaining', actions: recordToolCall },
              // A cancel or stop arrived while the call ran: the remaining calls still get their results.
              { guard: 'interrupted', target: '#turn.skipping_remaining', actions: recordToolCall },
              // That was the response's last call: back to the model, the step counted for the mistake breaker.
              { guard: 'isLastToolCall', target: '#turn.running_model', actions: recordToolCall },
              // The next calls are a run of reads that may run side by side (RL-5): start them, then the next call.
              { guard: 'nextCallsReadInParallel', target: 'tool_call', reenter: true, actions: [recordToolCall, 'startParallelReads'] },
              // The next call of the same response, in provider order: a new tool-call actor.
              { target: 'tool_call', reenter: true, actions: recordToolCall },
            ],
            // A tool-call actor that crashed (say, a tool schema that throws) still leaves every call with one result (RT-12).
            onError: {
              target: '#turn.skipping_remaining',
              actions: assign({
                termination: ({ event }) => ({
                  kind: 'failed',
                  code: 'tool_call_crashed',
                  message: `the tool call failed inside the runtime: ${event.error instanceof Error ? event.error.message : String(event.error)}`,
                }),
              }),
            },
          },
          initial: 'executing',
          states: {
            executing: {
              on: {
                'tool.permission_requested': {
                  target: 'waiting_permission',
                  actions: [
                    assign({ pendingPermission: ({ event }) => event.toolCallId }),
                    sendParent(({ event, context }) => ({
                      type: 'turn.permission_requested',
                      turnId: context.turnId,
                      toolCallId: event.toolCallId,
                      name: event.name,
                      paths: event.paths,
                    })),
                  ],
                },
              },
            },
            waiting_permission: {
              // Waiting for the user is not a stall: the watchdog pauses until the answer.
              entry: [{ type: 'emitPhase', params: { phase: 'waiting_permission' } }, sendTo(WATCHDOG, { type: 'watchdog.pause' })],
              exit: sendTo(WATCHDOG, { type: 'watchdog.resume' }),
              on: {
                'tool.permission_settled': {
                  target: 'executing',
                  actions: [
                    assign({ pendingPermission: null }),
                    sendParent(({ context }) => ({ type: 'turn.permission_settled', turnId: context.turnId })),
                    { type: 'emitPhase', params: { phase: 'running_tools' } },
                  ],
                },
                'turn.resolve_permission': {
                  guard: 'isPendingPermission',
                  actions: sendTo('toolCall', ({ event }) => ({ type: 'permission.resolve', decision: event.decision })),
                },
              },
            },
          },
          on: {
            'turn.cancel': { actions: ['assignInterrupt', 'cancelChildren', sendTo('toolCall', { type: 'tool.cancel' })] },
            'turn.timeout': {
              actions: ['assignInterrupt', 'cancelChildren', sendTo('toolCall', ({ event }) => ({ type: 'tool.cancel', reason: event.limit === 'stall' ? 'stall' : 'timeout' }))],
            },
            'turn.stop': { actions: ['assignInterrupt', 'cancelChildren', sendTo('toolCall', { type: 'tool.stop' })] },
          },
        },
      },
    },
    skipping_remaining: {
      entry: {
        type: 'requestEffect',
        params: ({ context }) => ({
          name: 'skipToolCalls',
          input: { sessionId: context.sessionId, turnId: context.turnId, calls: toolCallsOf(context).slice(context.toolIndex) },
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
        { guard: ({ context }) => context.interrupt === 'stop', target: 'failed', actions: assign({ outcome: STOPPED }) },
        { guard: 'stalled', target: 'failed', actions: 'assignStalled' },
        { guard: 'timedOut', target: 'timed_out' },
        { target: 'cancelled' },
      ],
    },
    completed: { type: 'final', entry: { type: 'emitPhase', params: { phase: 'completed' } } },
    failed: { type: 'final', entry: ['cancelChildren', { type: 'emitPhase', params: { phase: 'failed' } }] },
    cancelled: {
      type: 'final',
      entry: ['cancelChildren', assign({ outcome: { status: 'cancelled' } }), { type: 'emitPhase', params: { phase: 'cancelled' } }],
    },
    timed_out: {
      type: 'final',
      entry: [
        'cancelChildren',
        assign({
          outcome: ({ context }) => ({ status: 'timed_out', message: `the run passed its time limit of ${context.limits.runTimeoutMs ?? 0} ms` }),
        }),
        { type: 'emitPhase', params: { phase: 'timed_out' } },
      ],
    },
  },
  output: ({ context }) => ({ outcome: context.outcome ?? STOPPED, trackers: { loop: context.loop, mistakes: context.mistakes } }),
});

/** The tool calls of the stored response; none before the first response. */
function toolCallsOf(context: TurnContext): ToolCallPart[] {
  return context.response?.toolCalls ?? [];
}

function effectInput(context: TurnContext): TurnEffectInput {
  return { sessionId: context.sessionId, turnId: context.turnId };
}

