import { and, assign, not, or, sendParent, setup } from 'xstate';
import type { AuditDecision } from '../src/protocol/audit.js';
import type { AuthorizationDecision, ToolResult } from '../src/protocol/tool-result.js';
import { MAX_ARGUMENT_DEPTH, parseArguments } from './signature.js';
import { afterWait, breakRun, observeCall, passWait, recoveryHint, stopReason, type GuardrailTriggered, type LoopTracker, type LoopVerdict } from './guardrails.js';
import { isDelegationTool, SPAWN_AGENT, SWITCH_AGENT, WAIT_AGENT } from './delegation.js';
import { notProvided } from './not-provided.js';
import { failureOf } from './failure.js';
import { cancelEffectAction, requestEffectAction, type EffectReply } from './effect-port.js';
import type { ClearedCall, ToolCallCommand, ToolCallInput, ToolCallOutput, TurnTermination } from './tool-call.contract.js';
import { authorizationOf, dispatchOf, errorOf, executedOf, isWaitTimeout, toolResultOf, waitOf } from './tool-call.effects.js';
import type { AfterDispatchInput, ArgumentValidator, CallRetry, DispatchOutcome, ExecutedResult, ExecuteInput, LiveStatusParams, PermissionResolvedParams, RetryResolver, RuleResolver, ToolCallEffects, ToolEffectInput, ValidationOutput } from './tool-call.effects.js';
import type { ToolFailureKind } from '../src/protocol/tool-retry.js';
import { messageOf } from '../src/protocol/error-message.js';
import { ruleLabel, type MatchedRule } from '../src/protocol/permission-rule.js';

/**
 * One tool call (RT-15): `active` { `screening` — the parsed arguments are a JSON object? the name
 * resolves? the schema passes? under the loop and cycle stops (GR-1; a hint when a soft threshold
 * is reached, announced once)? then control tool → `running_control`, dispatch hooks →
 * `before_dispatch` (→ `dispatch_allowed`), `authorize` hook → `consulting_tool` (→ `tool_asked` /
 * `tool_allowed`), rule deny, mode deny, rule ask or mode ask → `waiting_permission`, rule allow or
 * else `executing` (→ `retrying` → `executing` again when the retry policy covers a run's timeout or
 * transient failure, issue 30; → `after_dispatch` when hooks watch results) } → `writing_result` →
 * `done`. An allowed `switch_agent` is a control tool; the allow-list and policy deny it first. Every path ends in `writing_result`, so
 * every call gets exactly one result (RT-12) and one audit row (RL-4). Issue 30: in an approval batch
 * (`holdBeforeRun`) the call stops in `held` where it would run, or (through `concluding`) where it
 * would write a result it came to before running; taken up again with `cleared`, it goes straight
 * to `executing` or `writing_result` (docs/architecture.md, "Approval batches").
 *
 * What the call and its turn say to each other is machines/tool-call.contract.ts; the effects it asks
 * the runtime for, machines/tool-call.effects.ts. Every guard and action is named in `setup`.
 */

export interface ToolCallContext extends ToolCallInput {
  args: Record<string, unknown>;
  /** Whether the arguments text parsed as a JSON object of bounded depth. */
  argumentsParsed: boolean;
  /** The arguments checked against the tool's schema as the call started; null when they did not parse. */
  validation: ValidationOutput | null;
  result: ToolResult | null;
  termination: TurnTermination | null;
  approvedPaths: string[];
  requestedPaths: string[];
  /** RL-4: who let the call through or stopped it; null until someone did (a call the mode simply allows stays null). */
  decision: AuditDecision | null;
  /** RL-4: the code of a hook that failed the call (`hook_failed`, `hook_timeout`, `hook_invalid_rewrite`). */
  hookError: string | null;
  /** RL-4: a `beforeToolDispatch` hook replaced the arguments. */
  rewritten: boolean;
  /** What the loop and cycle detectors said about this call (GR-1), once its arguments passed. */
  verdict: LoopVerdict;
  /** The soft threshold's `guardrail_triggered` went out. */
  hintAnnounced: boolean;
  /** Issue 24: the permission rule that decides this tool's name for the session's agent, as the call started; null for none. */
  permissionRule: MatchedRule | null;
  /** Issue 30: the retry policy of the call's tool (or its agent's default), as the call started; null for none. */
  retry: CallRetry | null;
  /** Issue 30: which run of the tool this is, from 1; a retry policy may run it again. */
  attempt: number;
  /** Issue 30: the call stops before it runs or writes (its batch's approvals come first). */
  holdBeforeRun: boolean;
  /** Issue 30: what the call came to while its batch was cleared; it goes straight to its run or its write. */
  cleared: ClearedCall | null;
}

export type ToolCallEvent = ToolCallCommand | EffectReply;

/** A guard the runtime supplies: it reads the call's context. */
type ContextGuard = [{ context: ToolCallContext }];

const CANCELLED_BY_USER = 'tool call cancelled by the user';
const DENIED_BY_MODE: AuditDecision = { verdict: 'denied', by: 'mode' };
const DENIED_BY_RULE: AuditDecision = { verdict: 'denied', by: 'rule' };
const DENIED_BY_HOOK: AuditDecision = { verdict: 'denied', by: 'hook' };
const DENIED_BY_USER: AuditDecision = { verdict: 'denied', by: 'user' };
const ALLOWED_BY_USER: AuditDecision = { verdict: 'allowed', by: 'user' };
const ALLOWED_BY_RULE: AuditDecision = { verdict: 'allowed', by: 'rule' };
const DENIED_BY_TIMEOUT: AuditDecision = { verdict: 'denied', by: 'timeout' };
const CANCELLED_BY_TIMEOUT = 'tool call cancelled: the run passed its time limit';
const CANCELLED_BY_STALL = 'tool call cancelled: the turn made no progress for too long';
const STOPPED = 'the session stopped before the tool call finished';

const toolCallSetup = setup({
  types: {
    input: {} as ToolCallInput,
    context: {} as ToolCallContext,
    events: {} as ToolCallEvent,
    output: {} as ToolCallOutput,
  },
  delays: {
    /**
     * Issue 26: how long the approval may still wait; supplied by the runtime, which knows when it was
     * first asked for (before a restart too). Only entered when `approvalExpires`.
     */
    approvalExpiry: 0,
    /** Issue 30: the wait before the next run of a tool whose run failed: `backoffMs`, doubled for each run after the second. */
    retryBackoff: ({ context }: { context: ToolCallContext }) => (context.retry?.backoffMs ?? 0) * 2 ** Math.max(0, context.attempt - 2),
  },
  guards: {
    /** Supplied by the runtime: is this name a control tool (e.g. `update_plan`)? */
    isControlTool: notProvided<ContextGuard, boolean>('tool-call', 'isControlTool'),
    /** Supplied by the runtime: is this name in the session's registry toolset? */
    isRegistryTool: notProvided<ContextGuard, boolean>('tool-call', 'isRegistryTool'),
    /** Supplied by the runtime: does the tool have its own `authorize` hook? */
    hasAuthorizeHook: notProvided<ContextGuard, boolean>('tool-call', 'hasAuthorizeHook'),
    /** Supplied by the runtime: the session has `beforeToolDispatch` hooks (RL-4). */
    hasBeforeDispatchHooks: notProvided<ContextGuard, boolean>('tool-call', 'hasBeforeDispatchHooks'),
    /** Supplied by the runtime: the session has `afterToolDispatch` hooks (RL-4). */
    hasAfterDispatchHooks: notProvided<ContextGuard, boolean>('tool-call', 'hasAfterDispatchHooks'),
    /** Supplied by the runtime: the session's mode rule-denies this tool (e.g. a write when read-only). */
    modeForbidsCall: notProvided<ContextGuard, boolean>('tool-call', 'modeForbidsCall'),
    /** Supplied by the runtime: the session's mode wants the user's approval for this tool. */
    modeRequiresApproval: notProvided<ContextGuard, boolean>('tool-call', 'modeRequiresApproval'),
    /** Supplied by the runtime: the session's agent allows no delegation, so its control tools are refused. */
    delegationForbidden: notProvided<ContextGuard, boolean>('tool-call', 'delegationForbidden'),
    /** Supplied by the runtime: the agent `spawn_agent` names is not one this agent may delegate to. */
    childAgentForbidden: notProvided<ContextGuard, boolean>('tool-call', 'childAgentForbidden'),
    /** Supplied by the runtime: this turn already has as many live children as the agent allows. */
    childLimitReached: notProvided<ContextGuard, boolean>('tool-call', 'childLimitReached'),
    /**
     * Supplied by the runtime (issue 30): `switch_agent` names an agent the session's agent does not
     * list in `switchTo`, or one the runtime does not know, or the session's policy forbids a switch.
     */
    agentSwitchForbidden: notProvided<ContextGuard, boolean>('tool-call', 'agentSwitchForbidden'),
    /** Supplied by the runtime (issue 26): the session's agent lets an approval wait only so long (`approvalTimeoutMs`); without it, approvals wait. */
    approvalExpires: () => false,
    /** Supplied by the runtime: nobody can answer an approval in this session (a sub-agent's): what would ask is denied. */
    approvalNonInteractive: notProvided<ContextGuard, boolean>('tool-call', 'approvalNonInteractive'),
    argumentsAreJsonObject: ({ context }) => context.argumentsParsed,
    // Issue 30: a call of an approval batch is held before it runs or writes; once the batch is cleared, it goes on from there.
    holdsBeforeRun: ({ context }) => context.holdBeforeRun,
    clearedToRun: ({ context }) => context.cleared !== null && context.cleared.result === null,
    clearedWithResult: ({ context }) => context.cleared?.result != null,
    argumentsMatchSchema: ({ context }) => context.validation?.ok === true,
    loopStopReached: ({ context }) => context.verdict?.level === 'hard',
    loopHintDue: ({ context }) => context.verdict?.level === 'soft' && !context.hintAnnounced,
    isDelegationTool: ({ context }) => isDelegationTool(context.call.name),
    isSpawnAgent: ({ context }) => context.call.name === SPAWN_AGENT,
    isWaitAgent: ({ context }) => context.call.name === WAIT_AGENT,
    isAgentSwitch: ({ context }) => context.call.name === SWITCH_AGENT,
    /** RT-14: this wait timed out, and the waits in a row that timed out reach the loop's stop. */
    // Issue 24: the permission rule for this tool's name, resolved by the runtime as the call started.
    ruleDenies: ({ context }) => context.permissionRule?.decision === 'deny',
    ruleAsks: ({ context }) => context.permissionRule?.decision === 'ask',
    ruleAllows: ({ context }) => context.permissionRule?.decision === 'allow',
    waitTimeoutsReachStop: ({ context, event }) => isWaitTimeout(event) && context.loop.waitTimeouts + 1 >= context.loopRules.hard,
    // `beforeToolDispatch`'s reply: the hooks deny the call, rewrite it into arguments the schema refuses, or rewrite it.
    hooksDeny: ({ event }) => dispatchOf(event).decision === 'deny',
    hooksRewriteInvalid: ({ event }) => dispatchOf(event).decision === 'invalid_rewrite',
    hooksRewrite: ({ event }) => dispatchOf(event).decision === 'rewrite',
    // `authorize`'s reply: the tool's hook allows the call, or asks the user about it.
    toolAllows: ({ event }) => authorizationOf(event).decision === 'allow',
    toolAsks: ({ event }) => authorizationOf(event).decision === 'ask',
    userAllows: ({ event }) => event.type === 'permission.resolve' && event.decision === 'allow_once',
    /** The tool itself answered that it was cancelled: the turn ends as cancelled. */
    toolCancelled: ({ event }) => toolResultOf(event).status === 'cancelled',
    /** Issue 30: the run failed in a way the call's retry policy tries again, the tool may run again, and runs are left. */
    attemptRetryable: ({ context, event }) => retries(context, executedOf(event).failure),
    /** Issue 30: the last run timed out, and the policy says a timeout ends the turn (`continueLoop: false`). */
    timeoutEndsTurn: ({ context, event }) => executedOf(event).failure === 'timeout' && context.retry?.on.includes('timeout') === true && !context.retry.continueLoop,
  },
  actions: {
    requestEffect: requestEffectAction<ToolCallContext, ToolCallEvent, ToolCallEffects>(),
    cancelEffect: cancelEffectAction<ToolCallContext, ToolCallEvent>(),
    /** Live updates and trace spans; supplied by the runtime. */
    startSpan: notProvided('tool-call', 'startSpan'),
    emitToolCallStarted: notProvided('tool-call', 'emitToolCallStarted'),
    setLiveStatus: notProvided<[unknown, LiveStatusParams]>('tool-call', 'setLiveStatus'),
    emitPermissionResolved: notProvided<[unknown, PermissionResolvedParams]>('tool-call', 'emitPermissionResolved'),
    finishCall: notProvided('tool-call', 'finishCall'),
    /** Supplied by the runtime: the `guardrail_triggered` update. */
    emitGuardrailTriggered: notProvided<[unknown, GuardrailTriggered]>('tool-call', 'emitGuardrailTriggered'),
    /** Supplied by the runtime as an `assign` of `requestedPaths`: what an approval the mode asks for names. */
    assignApprovalPaths: approvalPathsAction(() => []),
    // The session announces an approval request once it has recorded it (the turn passes it on), so a UI that answers at once is not refused.
    requestPermission: sendParent(({ context }) => ({
      type: 'tool.permission_requested',
      toolCallId: context.call.id,
      name: context.call.name,
      paths: context.requestedPaths,
    })),
    settlePermission: sendParent(({ context }) => ({ type: 'tool.permission_settled', toolCallId: context.call.id })),
    // Screening: each check that stops the call writes its own result.
    assignNotJsonObject: assign({
      result: ({ context }) => ({
        status: 'failed',
        content: `InvalidArguments: the arguments of '${context.call.name}' are not a JSON object (nested at most ${MAX_ARGUMENT_DEPTH} deep)`,
      }),
    }),
    assignToolNotFound: assign({
      result: ({ context }) => ({ status: 'failed', content: `ToolNotFound: no tool named '${context.call.name}' is available` }),
    }),
    assignSchemaFailure: assign({
      result: ({ context }) => ({ status: 'failed', content: `InvalidArguments: ${context.validation?.ok === false ? context.validation.message : 'no schema'}` }),
    }),
    assignLoopStop: assign({
      result: ({ context }) => ({ status: 'failed', content: stopReason(context.verdict!, context.call.name).result }),
      termination: ({ context }) => ({ kind: 'failed', code: 'doom_loop', message: stopReason(context.verdict!, context.call.name).message }),
    }),
    markHintAnnounced: assign({ hintAnnounced: true }),
    assignDelegationDenial: assign({
      result: ({ context }) => ({ status: 'denied', content: `denied by rule: this agent may not delegate ('${context.call.name}')` }),
      decision: DENIED_BY_RULE,
    }),
    assignUnknownChildAgent: assign({
      result: ({ context }) => ({ status: 'denied', content: `denied by rule: UnknownAgent: '${String(context.args.agent)}' is not an agent this agent may delegate to` }),
      decision: DENIED_BY_RULE,
    }),
    assignSwitchDenial: assign({
      result: ({ context }) => ({ status: 'denied', content: `denied by rule: this agent may not switch to '${String(context.args.agent)}'` }),
      decision: DENIED_BY_RULE,
    }),
    assignChildLimitDenial: assign({
      result: { status: 'denied', content: 'denied by rule: ChildLimitReached: this turn already runs as many sub-agents as its agent allows; wait for one first' },
      decision: DENIED_BY_RULE,
    }),
    assignModeDenial: assign({
      result: ({ context }) => ({
        status: 'denied',
        content: `denied by rule: the session's permission mode does not allow '${context.call.name}'`,
      }),
      decision: DENIED_BY_MODE,
    }),
    /** A permission rule denies the tool: the result names the rule, so the model (and whoever reads the log) sees which. */
    assignRuleDenial: assign({
      result: ({ context }) => ({ status: 'denied', content: `denied by the permission rule '${ruleLabel(context.permissionRule!)}'` }),
      decision: DENIED_BY_RULE,
    }),
    /** A permission rule allows the tool where the mode would ask: the rule, not the mode, let it through. */
    assignRuleAllowance: assign({ decision: ALLOWED_BY_RULE }),
    /** Non-interactive approval: a call that would ask is a rule denial, with the reason; the turn goes on. */
    assignNonInteractiveDenial: assign({
      result: ({ context }) => ({
        status: 'denied',
        content: `denied by rule: '${context.call.name}' needs an approval, and this session cannot ask for one (a sub-agent's session is non-interactive)`,
      }),
      decision: DENIED_BY_RULE,
    }),
    // The dispatch hooks' answer.
    assignHookDenial: assign({
      result: ({ event }) => ({ status: 'denied', content: `denied by hook: ${hookReason(dispatchOf(event))}` }),
      decision: DENIED_BY_HOOK,
    }),
    assignInvalidRewrite: assign({
      result: ({ event }) => ({ status: 'failed', content: `hook_invalid_rewrite: ${hookReason(dispatchOf(event))}` }),
      hookError: 'hook_invalid_rewrite',
      decision: DENIED_BY_HOOK,
      rewritten: true,
    }),
    assignRewrittenArgs: assign({ args: ({ event }) => rewrittenArgs(dispatchOf(event)), rewritten: true }),
    /** A dispatch hook that threw or passed its time limit fails the call closed: the tool does not run. */
    assignBeforeHookFailure: assign({
      result: ({ event }) => ({ status: 'failed', content: messageOf(errorOf(event)) }),
      hookError: ({ event }) => hookCodeOf(errorOf(event)),
      decision: DENIED_BY_HOOK,
    }),
    /** After the tool ran: its output is withheld from the model, since the hook that watches results could not. */
    assignAfterHookFailure: assign({
      result: ({ context, event }) => ({
        status: 'failed',
        content: `${messageOf(errorOf(event))} (the tool's result, ${context.result?.status ?? 'none'}, is withheld)`,
      }),
      hookError: ({ event }) => hookCodeOf(errorOf(event)),
    }),
    // The tool's `authorize` hook, and the user.
    assignAskedPaths: assign({ requestedPaths: ({ event }) => askedPaths(authorizationOf(event)) }),
    assignToolDenial: assign({
      result: ({ event }) => ({ status: 'denied', content: `denied by rule: ${denialReason(authorizationOf(event))}` }),
      decision: DENIED_BY_RULE,
    }),
    assignUserApproval: assign({ approvedPaths: ({ context }) => context.requestedPaths, decision: ({ event }) => answeredBy(ALLOWED_BY_USER, event) }),
    /** Issue 26: nobody answered in time: the call is denied, and the turn ends as after a denial. */
    assignApprovalExpired: assign({
      result: { status: 'denied', content: 'denied: nobody answered the approval request before it expired' },
      termination: { kind: 'failed', code: 'permission_denied', message: 'the approval request expired without an answer' },
      decision: DENIED_BY_TIMEOUT,
    }),
    assignUserDenial: assign({
      result: { status: 'denied', content: 'denied by the user' },
      termination: { kind: 'failed', code: 'permission_denied', message: 'the user denied the tool call' },
      decision: ({ event }) => answeredBy(DENIED_BY_USER, event),
    }),
    // What ran: a tool, a control tool, a delegation, a wait.
    assignToolResult: assign({ result: ({ event }) => toolResultOf(event) }),
    /** The tool's result, without the failure kind the retry guards read; a run after the first says which it was. */
    assignExecutedResult: assign({ result: ({ context, event }) => executedResult(context, executedOf(event)) }),
    /** Issue 30: one more run of the tool, after the backoff. */
    nextAttempt: assign({ attempt: ({ context }) => context.attempt + 1 }),
    /** Issue 30: the last run timed out and the policy ends the turn: `failed` with `tool_timeout`. */
    assignTimeoutEnd: assign({
      result: ({ context, event }) => executedResult(context, executedOf(event)),
      termination: ({ context }) => ({
        kind: 'failed',
        code: 'tool_timeout',
        message: `'${context.call.name}' timed out ${context.attempt === 1 ? 'once' : `${context.attempt} times`}, and its retry policy ends the turn`,
      }),
    }),
    assignCancelledResult: assign({ result: ({ event }) => toolResultOf(event), termination: { kind: 'cancelled' } }),
    assignFailedResult: assign({ result: ({ event }) => failedResult(errorOf(event)) }),
    /** RT-14: the waits in a row that timed out reached the loop's stop: the turn ends `doom_loop`. */
    assignWaitStop: assign({
      result: { status: 'failed', content: `doom loop detected for tool '${WAIT_AGENT}'` },
      termination: ({ context }) => ({
        kind: 'failed',
        code: 'doom_loop',
        message: `'${WAIT_AGENT}' timed out ${context.loop.waitTimeouts + 1} times in a row`,
      }),
      loop: ({ context }) => afterWait(context.loop, true),
    }),
    /** The child's answer, or that the wait's time ran out (one more timeout in a row); any other answer ends the run of timeouts. */
    assignWaitResult: assign({ result: ({ event }) => waitOf(event).result, loop: ({ context, event }) => afterWait(context.loop, waitOf(event).timedOut) }),
    // How the call ends when it is interrupted, or its result cannot be written.
    assignCancelled: assign({
      result: ({ event }) => ({ status: 'cancelled', content: cancelledText(event) }),
      termination: { kind: 'cancelled' },
    }),
    assignStopped: assign({
      result: { status: 'outcome_unknown', content: STOPPED },
      termination: { kind: 'failed', code: 'actor_stopped', message: STOPPED },
    }),
    /** A result chat state refuses is chat_state_error; any other failed write, persistence_error (RT-9). */
    assignWriteFailure: assign({
      termination: ({ event }) => {
        const failure = failureOf(errorOf(event), 'persistence_error');
        return {
          kind: 'failed',
          code: failure.code === 'chat_state_error' ? 'chat_state_error' : 'persistence_error',
          message: `the tool result could not be written: ${failure.message}`,
        };
      },
    }),
  },
});

/** Issue 24: a permission rule denies the tool in every mode, whatever else allowed or asked. */
const RULE_DENIES = { guard: 'ruleDenies', target: '#toolCall.concluding', actions: 'assignRuleDenial' } as const;

/** The session's mode rule-denies the call (e.g. a write when read-only), whatever else allowed or asked. */
const MODE_FORBIDS = { guard: 'modeForbidsCall', target: '#toolCall.concluding', actions: 'assignModeDenial' } as const;

/**
 * The permission rules and the session's mode decide a call nothing before it stopped or sent
 * elsewhere, deny before ask before allow: a rule denies it; the mode forbids it (a rule's allow never
 * widens `read_only`); a rule asks, even in `auto` and for a read; a rule allows it, so the mode's ask
 * is not needed; the mode wants the user's approval. An approval is a rule denial when nobody can
 * give one (a non-interactive session). Else the call runs. The same ordered list wherever the
 * chart reaches that decision — after screening, after the dispatch hooks, after the tool's
 * `authorize` hook allowed — spread into each state's own list, so no state is added and no microstep.
 */
const MODE_DECIDES = [
  RULE_DENIES,
  MODE_FORBIDS,
  { guard: and(['ruleAsks', 'approvalNonInteractive']), target: '#toolCall.concluding', actions: 'assignNonInteractiveDenial' },
  { guard: 'ruleAsks', target: 'waiting_permission', actions: 'assignApprovalPaths' },
  { guard: and(['ruleAllows', 'holdsBeforeRun']), target: '#toolCall.held', actions: 'assignRuleAllowance' },
  { guard: 'ruleAllows', target: 'executing', actions: 'assignRuleAllowance' },
  { guard: and(['modeRequiresApproval', 'approvalNonInteractive']), target: '#toolCall.concluding', actions: 'assignNonInteractiveDenial' },
  { guard: 'modeRequiresApproval', target: 'waiting_permission', actions: 'assignApprovalPaths' },
  { guard: 'holdsBeforeRun', target: '#toolCall.held' },
  { target: 'executing' },
] as const;

/**
 * The tool-call chart with the runtime's argument validator (RT-15: the name resolved, the schema
 * checked). Validation is pure, so it happens as the context is made — with the parse and the loop
 * count — rather than in an `assign` on entry: every `assign` copies the snapshot, and this one ran
 * once per tool call. The permission rule that decides the call (issue 24) is looked up there too,
 * by the runtime's `ruleFor`: the rule guards then read a value, and the chart stays pure.
 */
export function toolCallChart(validate: ArgumentValidator, ruleFor: RuleResolver = () => null, retryFor: RetryResolver = () => null) {
  return toolCallSetup.createMachine({
    id: 'toolCall',
    context: ({ input }) => initialContext(input, validate, ruleFor, retryFor),
    initial: 'active',
    states: {
      active: {
        initial: 'screening',
        // The arguments were parsed, validated and counted for the loop rules as the context was made.
        entry: ['startSpan', 'emitToolCallStarted'],
        states: {
          /**
           * Everything decided before a tool runs, as one ordered list: the first guard that holds
           * picks the outcome. One state instead of a chain of eventless states, because every
           * microstep costs a snapshot; the order is the order the checks were specified in.
           */
          screening: {
            always: [
              // Issue 30: screened already, while its batch was cleared: it runs, or writes what it came to.
              { guard: 'clearedWithResult', target: '#toolCall.writing_result' },
              { guard: 'clearedToRun', target: 'executing' },
              // The arguments text is not a JSON object of bounded depth: nothing else can be checked.
              { guard: not('argumentsAreJsonObject'), target: '#toolCall.concluding', actions: 'assignNotJsonObject' },
              // No control tool and no registry tool has this name.
              { guard: not(or(['isControlTool', 'isRegistryTool'])), target: '#toolCall.concluding', actions: 'assignToolNotFound' },
              // The arguments fail the tool's schema.
              { guard: not('argumentsMatchSchema'), target: '#toolCall.concluding', actions: 'assignSchemaFailure' },
              // RT-14 / GR-1: the same call too many times in a row, or a sequence repeated too often, ends the turn.
              {
                guard: 'loopStopReached',
                target: '#toolCall.concluding',
                actions: [{ type: 'emitGuardrailTriggered', params: ({ context }) => triggered(context) }, 'assignLoopStop'],
              },
              // GR-1: a soft threshold is announced once; the call goes on, and its result will carry the hint.
              { guard: 'loopHintDue', actions: [{ type: 'emitGuardrailTriggered', params: ({ context }) => triggered(context) }, 'markHintAnnounced'] },
              // Delegation: only an agent that allows it, only to the agents it names, only so many live children per turn.
              { guard: and(['isDelegationTool', 'delegationForbidden']), target: '#toolCall.concluding', actions: 'assignDelegationDenial' },
              { guard: and(['isSpawnAgent', 'childAgentForbidden']), target: '#toolCall.concluding', actions: 'assignUnknownChildAgent' },
              { guard: and(['isSpawnAgent', 'childLimitReached']), target: '#toolCall.concluding', actions: 'assignChildLimitDenial' },
              { guard: 'isWaitAgent', target: 'waiting_agent' },
              { guard: 'isDelegationTool', target: 'delegating' },
              // Issue 30: agent.switch only to an agent the allow-list names, and a permission rule's deny is policy.
              { guard: and(['isAgentSwitch', 'agentSwitchForbidden']), target: '#toolCall.concluding', actions: 'assignSwitchDenial' },
              { guard: and(['isAgentSwitch', 'ruleDenies']), target: '#toolCall.concluding', actions: 'assignRuleDenial' },
              // Control tools (e.g. `update_plan`, an allowed `switch_agent`) run without authorization.
              { guard: 'isControlTool', target: '#toolCall.running_control' },
              // RL-4: dispatch hooks first — they may deny or rewrite, and a rewritten call is what the user is asked about.
              { guard: 'hasBeforeDispatchHooks', target: 'before_dispatch' },
              // RT-16: the tool's own `authorize` hook first (it may deny or ask), then the session's mode.
              { guard: 'hasAuthorizeHook', target: 'consulting_tool' },
              ...MODE_DECIDES,
            ],
          },
          before_dispatch: {
            entry: { type: 'requestEffect', params: ({ context }) => ({ name: 'beforeToolDispatch', input: effectInput(context) }) },
            on: {
              'effect.done': [
                { guard: 'hooksDeny', target: '#toolCall.concluding', actions: 'assignHookDenial' },
                // A rewrite is checked against the tool's schema again; one that fails it fails the call.
                { guard: 'hooksRewriteInvalid', target: '#toolCall.concluding', actions: 'assignInvalidRewrite' },
                { guard: 'hooksRewrite', target: 'dispatch_allowed', actions: 'assignRewrittenArgs' },
                { target: 'dispatch_allowed' },
              ],
              'effect.failed': { target: '#toolCall.concluding', actions: 'assignBeforeHookFailure' },
            },
          },
          /** The hooks let the call through: the rest of the screening list, with the (possibly rewritten) arguments. */
          dispatch_allowed: {
            always: [{ guard: 'hasAuthorizeHook', target: 'consulting_tool' }, ...MODE_DECIDES],
          },
          consulting_tool: {
            entry: { type: 'requestEffect', params: ({ context }) => ({ name: 'authorize', input: effectInput(context) }) },
            on: {
              'effect.done': [
                { guard: 'toolAllows', target: 'tool_allowed' },
                { guard: 'toolAsks', target: 'tool_asked', actions: 'assignAskedPaths' },
                { target: '#toolCall.concluding', actions: 'assignToolDenial' },
              ],
              'effect.failed': { target: '#toolCall.concluding', actions: 'assignFailedResult' },
            },
          },
          /** The tool's hook asks: a permission rule's deny or the mode may still forbid the call; else the user is asked, if anyone can answer (a rule's allow does not outweigh the tool's own ask). */
          tool_asked: {
            always: [
              RULE_DENIES,
              MODE_FORBIDS,
              { guard: 'approvalNonInteractive', target: '#toolCall.concluding', actions: 'assignNonInteractiveDenial' },
              { target: 'waiting_permission' },
            ],
          },
          /** The tool's hook allows: the session's mode still decides. */
          tool_allowed: {
            always: [...MODE_DECIDES],
          },
          waiting_permission: {
            // The session announces the request once it has recorded it, so a UI that answers at once is not refused.
            entry: [{ type: 'setLiveStatus', params: { status: 'waiting_permission' } }, 'requestPermission'],
            exit: 'settlePermission',
            // Issue 26: an approval with an expiry is denied when it passes unanswered.
            initial: 'deadline',
            states: {
              deadline: { always: [{ guard: 'approvalExpires', target: 'expiring' }, { target: 'unbounded' }] },
              expiring: {
                after: {
                  approvalExpiry: {
                    target: '#toolCall.concluding',
                    actions: [{ type: 'emitPermissionResolved', params: { decision: 'expired' } }, 'assignApprovalExpired'],
                  },
                },
              },
              unbounded: {},
            },
            on: {
              'permission.resolve': [
                // Issue 30: approved, in a batch whose approvals come first: it runs once the turn has them all.
                {
                  guard: and(['userAllows', 'holdsBeforeRun']),
                  target: '#toolCall.held',
                  actions: [{ type: 'emitPermissionResolved', params: { decision: 'allow_once' } }, 'assignUserApproval'],
                },
                {
                  guard: 'userAllows',
                  target: 'executing',
                  actions: [{ type: 'emitPermissionResolved', params: { decision: 'allow_once' } }, 'assignUserApproval'],
                },
                {
                  target: '#toolCall.concluding',
                  actions: [{ type: 'emitPermissionResolved', params: { decision: 'deny' } }, 'assignUserDenial'],
                },
              ],
              'tool.cancel': {
                target: '#toolCall.concluding',
                actions: [{ type: 'emitPermissionResolved', params: { decision: 'cancelled' } }, 'assignCancelled'],
              },
              'tool.stop': {
                target: '#toolCall.concluding',
                actions: [{ type: 'emitPermissionResolved', params: { decision: 'actor_stopped' } }, 'assignStopped'],
              },
            },
          },
          /** `spawn_agent` / `send_agent_message`: the child is started or written to; the call answers at once. */
          delegating: {
            entry: { type: 'requestEffect', params: ({ context }) => ({ name: 'delegate', input: effectInput(context) }) },
            on: {
              'effect.done': { target: '#toolCall.writing_result', actions: 'assignToolResult' },
              'effect.failed': { target: '#toolCall.writing_result', actions: 'assignFailedResult' },
            },
          },
          /** `wait_agent`: inside `active`, so a cancel or stop of the parent reaches the wait at once. */
          waiting_agent: {
            entry: { type: 'requestEffect', params: ({ context }) => ({ name: 'waitAgent', input: effectInput(context) }) },
            on: {
              'effect.done': [
                // RT-14: waits are not repeats, but waits in a row that time out end the turn like a loop.
                {
                  guard: 'waitTimeoutsReachStop',
                  target: '#toolCall.writing_result',
                  actions: [
                    { type: 'emitGuardrailTriggered', params: ({ context }) => ({ rule: 'loop', level: 'hard', toolName: WAIT_AGENT, count: context.loop.waitTimeouts + 1 }) },
                    'assignWaitStop',
                  ],
                },
                { target: '#toolCall.writing_result', actions: 'assignWaitResult' },
              ],
              'effect.failed': { target: '#toolCall.writing_result', actions: 'assignFailedResult' },
            },
          },
          executing: {
            entry: [
              { type: 'setLiveStatus', params: { status: 'running' } },
              { type: 'requestEffect', params: ({ context }) => ({ name: 'executeTool', input: executeInput(context) }) },
            ],
            on: {
              'effect.done': [
                { guard: 'toolCancelled', target: '#toolCall.writing_result', actions: 'assignCancelledResult' },
                // Issue 30: a timeout or transient failure the retry policy covers runs the tool again, after a backoff.
                { guard: 'attemptRetryable', target: 'retrying', actions: 'nextAttempt' },
                // Issue 30: the last run timed out and the policy ends the turn (the result hooks still see the result).
                { guard: and(['timeoutEndsTurn', 'hasAfterDispatchHooks']), target: 'after_dispatch', actions: 'assignTimeoutEnd' },
                { guard: 'timeoutEndsTurn', target: '#toolCall.writing_result', actions: 'assignTimeoutEnd' },
                // RL-4: hooks that watch results see this one before it is written.
                { guard: 'hasAfterDispatchHooks', target: 'after_dispatch', actions: 'assignExecutedResult' },
                { target: '#toolCall.writing_result', actions: 'assignExecutedResult' },
              ],
              'effect.failed': [
                { guard: 'hasAfterDispatchHooks', target: 'after_dispatch', actions: 'assignFailedResult' },
                { target: '#toolCall.writing_result', actions: 'assignFailedResult' },
              ],
            },
          },
          /**
           * Issue 30: the run failed in a way the retry policy covers: the next run starts after the
           * backoff, on the runtime's clock. A cancel or stop meanwhile ends the call (`active`'s own).
           */
          retrying: {
            after: { retryBackoff: { target: 'executing' } },
          },
          /** Read-only: the hooks see the result; one that fails withholds it (fails closed). A cancel still ends the call as cancelled. */
          after_dispatch: {
            entry: { type: 'requestEffect', params: ({ context }) => ({ name: 'afterToolDispatch', input: afterDispatchInput(context) }) },
            on: {
              'effect.done': { target: '#toolCall.writing_result' },
              'effect.failed': { target: '#toolCall.writing_result', actions: 'assignAfterHookFailure' },
            },
          },
        },
        on: {
          // Cancelling the pending request aborts its signal: cancel reaches a running tool or hook.
          'tool.cancel': { target: 'concluding', actions: ['cancelEffect', 'assignCancelled'] },
          'tool.stop': { target: 'concluding', actions: ['cancelEffect', 'assignStopped'] },
        },
      },
      /**
       * Issue 30: where a call ends that did not run (screened out, denied, cancelled before its run):
       * in an approval batch it keeps that result for the turn to write in provider order; else it writes it now.
       */
      concluding: {
        always: [{ guard: 'holdsBeforeRun', target: 'held' }, { target: 'writing_result' }],
      },
      /** Issue 30: held before its run or its write; the turn has what it came to (`cleared` in the output). */
      held: { type: 'final' },
      running_control: {
        // Control tools are short writes; a cancel is honoured at the turn's next checkpoint.
        entry: { type: 'requestEffect', params: ({ context }) => ({ name: 'runControlTool', input: effectInput(context) }) },
        on: {
          'effect.done': { target: 'writing_result', actions: 'assignToolResult' },
          'effect.failed': { target: 'writing_result', actions: 'assignFailedResult' },
        },
      },
      writing_result: {
        entry: {
          type: 'requestEffect',
          params: ({ context }) => ({
            name: 'writeResult',
            input: {
              sessionId: context.sessionId,
              turnId: context.turnId,
              call: context.call,
              result: resultOf(context),
              args: context.args,
              argumentsParsed: context.argumentsParsed,
              decision: context.decision,
              hookError: context.hookError,
              rewritten: context.rewritten,
              termination: context.termination,
            },
          }),
        },
        on: {
          'effect.done': { target: 'done', actions: 'finishCall' },
          'effect.failed': { target: 'done', actions: 'assignWriteFailure' },
        },
      },
      done: { type: 'final' },
    },
    output: ({ context }) => ({
      toolCallId: context.call.id,
      result: resultOf(context),
      termination: context.termination,
      loop: context.loop,
      cleared: context.holdBeforeRun ? clearedOf(context) : null,
    }),
  });
}

/** The user's decision, with the principal that answered when the answer names one (issue 25). */
function answeredBy(decision: AuditDecision, event: ToolCallEvent): AuditDecision {
  const principal = event.type === 'permission.resolve' ? event.principal : undefined;
  return principal === undefined ? decision : { ...decision, principal };
}

/** The chart as host apps, the visualizer and the generated tests see it: the runtime builds its own with `toolCallChart`. */
export const toolCallMachine = toolCallChart(() => ({ ok: false, message: 'no argument validator was provided' }));

/**
 * A call's context as it starts: the arguments parsed, checked against the tool's schema and, when
 * they pass, counted for the loop rules (GR-1). A call that fails (no JSON object, unknown tool,
 * schema) breaks the run of identical calls: it is not one of them. Fields are listed one by one,
 * not spread from the input: spreading and then adding fields is slow in V8 (docs/architecture.md).
 */
function initialContext(input: ToolCallInput, validate: ArgumentValidator, ruleFor: RuleResolver, retryFor: RetryResolver): ToolCallContext {
  if (input.cleared) return clearedContext(input, input.cleared, retryFor);
  const parsed = parseArguments(input.call.argumentsText);
  const validation = parsed === undefined ? null : validate(input.call.name, parsed, input);
  const { args, loop, verdict } = counted(input, validation?.ok ? validation.args : undefined);
  return {
    sessionId: input.sessionId,
    turnId: input.turnId,
    call: input.call,
    loop,
    loopRules: input.loopRules,
    args: args ?? parsed ?? {},
    argumentsParsed: parsed !== undefined,
    validation,
    result: null,
    termination: null,
    approvedPaths: [],
    requestedPaths: [],
    decision: null,
    hookError: null,
    rewritten: false,
    verdict,
    hintAnnounced: false,
    permissionRule: ruleFor(input),
    // After the argument check: the runtime resolved the call's tool there.
    retry: retryFor(input),
    attempt: 1,
    holdBeforeRun: input.holdBeforeRun === true,
    cleared: null,
  };
}

/**
 * Issue 30: a call of an approval batch, taken up again once the batch is cleared: screened, counted
 * for the loop rules and decided then, so it starts from what it came to (the turn's loop count
 * already holds it).
 */
function clearedContext(input: ToolCallInput, cleared: ClearedCall, retryFor: RetryResolver): ToolCallContext {
  return {
    sessionId: input.sessionId,
    turnId: input.turnId,
    call: input.call,
    loop: input.loop,
    loopRules: input.loopRules,
    args: cleared.args,
    argumentsParsed: true,
    validation: { ok: true, args: cleared.args },
    result: cleared.result,
    termination: cleared.termination,
    approvedPaths: cleared.approvedPaths,
    requestedPaths: cleared.approvedPaths,
    decision: cleared.decision,
    hookError: cleared.hookError,
    rewritten: cleared.rewritten,
    verdict: cleared.verdict,
    hintAnnounced: true,
    permissionRule: null,
    retry: retryFor(input),
    attempt: 1,
    holdBeforeRun: false,
    cleared,
  };
}

/** Issue 30: what a held call came to, for its turn to hand back once the batch is cleared. */
function clearedOf(context: ToolCallContext): ClearedCall {
  const { args, approvedPaths, decision, hookError, rewritten, verdict, result, termination } = context;
  return { args, approvedPaths, decision, hookError, rewritten, verdict, result, termination };
}

/** The loop rules' view of a call whose arguments passed (`valid`), or of one that breaks the run. */
function counted(input: ToolCallInput, valid: Record<string, unknown> | undefined): { args?: Record<string, unknown>; loop: LoopTracker; verdict: LoopVerdict } {
  if (!valid) return { loop: breakRun(input.loop), verdict: null };
  // RT-14: a wait is not counted as a repeat; only its timeouts are (in `waiting_agent`).
  if (input.call.name === WAIT_AGENT) return { args: valid, loop: passWait(input.loop), verdict: null };
  const { tracker, verdict } = observeCall(input.loop, input.call.name, valid, input.loopRules);
  return { args: valid, loop: tracker, verdict };
}

/** Issue 30: whether a run that failed this way is run again: the policy covers the failure, the tool may repeat, runs are left. */
function retries(context: ToolCallContext, failure: ToolFailureKind | undefined): boolean {
  const retry = context.retry;
  return failure !== undefined && retry !== null && retry.repeatable && retry.on.includes(failure) && context.attempt < retry.maxAttempts;
}

/** A run's result as it is written: its status and content; after a retry, which run it was. */
function executedResult(context: ToolCallContext, executed: ExecutedResult): ToolResult {
  if (context.attempt === 1) return { status: executed.status, content: executed.content };
  return { status: executed.status, content: `${executed.content} (run ${context.attempt} of at most ${context.retry?.maxAttempts ?? context.attempt})` };
}

/** The call's result; a soft threshold's recovery hint is appended to whatever it was (the call still ran). */
function resultOf(context: ToolCallContext): ToolResult {
  const result = context.result ?? { status: 'outcome_unknown', content: 'no result was produced' };
  if (context.verdict?.level !== 'soft') return result;
  return { status: result.status, content: result.content + recoveryHint(context.verdict, context.call.name) };
}

function triggered(context: ToolCallContext): GuardrailTriggered {
  const verdict = context.verdict!;
  return { rule: verdict.rule, level: verdict.level, toolName: context.call.name, count: verdict.count };
}

/** How the runtime supplies the paths an approval asked by the session's mode names (a tool's `approvalPaths`). */
export function approvalPathsAction(paths: (context: ToolCallContext) => string[]) {
  return assign<ToolCallContext, ToolCallEvent, undefined, ToolCallEvent, never>({ requestedPaths: ({ context }) => paths(context) });
}

function cancelledText(event: ToolCallEvent): string {
  if (event.type !== 'tool.cancel' || event.reason === undefined) return CANCELLED_BY_USER;
  return event.reason === 'stall' ? CANCELLED_BY_STALL : CANCELLED_BY_TIMEOUT;
}

function effectInput(context: ToolCallContext): ToolEffectInput {
  return {
    sessionId: context.sessionId,
    turnId: context.turnId,
    toolCallId: context.call.id,
    name: context.call.name,
    args: context.args,
  };
}

/** Written out rather than spread from `effectInput`: spreading and then adding a field is slow in V8. */
function executeInput(context: ToolCallContext): ExecuteInput {
  const { sessionId, turnId, call, args, approvedPaths } = context;
  return { sessionId, turnId, toolCallId: call.id, name: call.name, args, approvedPaths };
}

function afterDispatchInput(context: ToolCallContext): AfterDispatchInput {
  const { sessionId, turnId, call, args } = context;
  return { sessionId, turnId, toolCallId: call.id, name: call.name, args, result: context.result ?? { status: 'outcome_unknown', content: 'no result was produced' } };
}

function hookReason(outcome: DispatchOutcome): string {
  if (outcome.decision === 'deny') return outcome.reason;
  return outcome.decision === 'invalid_rewrite' ? outcome.message : '';
}

function rewrittenArgs(outcome: DispatchOutcome): Record<string, unknown> {
  return outcome.decision === 'rewrite' ? outcome.args : {};
}

/** The code a failed hook effect carries (`hook_failed`, `hook_timeout`); any other failure of a hook is `hook_failed`. */
function hookCodeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'hook_timeout' ? 'hook_timeout' : 'hook_failed';
}

function askedPaths(decision: AuthorizationDecision): string[] {
  return decision.decision === 'ask' ? (decision.paths ?? []) : [];
}

function denialReason(decision: AuthorizationDecision): string {
  return decision.decision === 'deny' ? (decision.reason ?? 'not permitted') : 'not permitted';
}

function failedResult(error: unknown): ToolResult {
  return { status: 'failed', content: `tool error: ${messageOf(error)}` };
}
