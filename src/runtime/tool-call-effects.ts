import { z } from 'zod';
import { approvalPathsAction, type ToolCallContext } from '../../machines/tool-call.machine.js';
import type {
  CallRetry,
  DispatchOutcome,
  ExecutedResult,
  ExecuteInput,
  LiveStatusParams,
  PermissionResolvedParams,
  ToolCallEffects,
  ToolEffectInput,
  ValidationOutput,
  WriteResultInput,
} from '../../machines/tool-call.effects.js';
import type { GuardrailTriggered } from '../../machines/guardrails.js';
import type { EffectCancellation, EffectHandlers } from './effect-port.js';
import { planSchema } from '../protocol/plan.js';
import type { SpanFacts, SpanStatus } from '../protocol/trace.js';
import type { AuthorizationDecision, ToolResult } from '../protocol/tool-result.js';
import type { AnyTool, ToolExecutionResult } from '../tools/define-tool.js';
import type { ClearedCall, ToolCallInput } from '../../machines/tool-call.contract.js';
import type { MatchedRule } from '../protocol/permission-rule.js';
import { modeForbids, modeRequiresApproval } from '../tools/permission-policy.js';
import { UPDATE_PLAN } from '../tools/toolset.js';
import { emit, persistAndAppend, type SessionEnv } from './session-env.js';
import { span, toolSpanId, type TurnEffectDeps } from './turn-effects.js';
import { withToolTimeLimit } from './tool-deadline.js';
import { joinStartedRead } from './parallel-reads.js';
import { emitGuardrailTriggered } from './guardrail-updates.js';
import type { ToolCallPart } from '../protocol/messages.js';
import { dispatchHookEffects } from './dispatch-hooks.js';
import { toolCallAudit } from './tool-audit.js';
import { DELEGATION_SCHEMAS } from '../tools/delegation-tools.js';
import { messageOf } from '../protocol/error-message.js';
import { resolveRetryPolicy, type ToolRetryPolicy } from '../protocol/tool-retry.js';

type Ctx = { context: ToolCallContext };

const authorizationSchema = z.discriminatedUnion('decision', [
  z.object({ decision: z.literal('allow') }),
  z.object({ decision: z.literal('deny'), reason: z.string().optional() }),
  z.object({ decision: z.literal('ask'), paths: z.array(z.string()).optional() }),
]);

const EXECUTION_STATUSES: ReadonlySet<unknown> = new Set(['succeeded', 'failed', 'cancelled']);

/** A tool's return value checked by hand: this runs once per call on the hot path. */
function isExecutionResult(value: unknown): value is ToolExecutionResult {
  const v = value as Partial<ToolExecutionResult> | null;
  return typeof v === 'object' && v !== null && EXECUTION_STATUSES.has(v.status) && typeof v.content === 'string';
}

/** The tool-call chart's effects (RT-15, RT-16), supplied with `toolCallMachine.provide()`. */
export function toolCallEffects(deps: TurnEffectDeps) {
  const { env: envOf, toolset, trace, now } = deps;

  /**
   * The registry tool of a call: the one it resolved as it started (for the session's agent, from the
   * registry as it then stood); a read started ahead of its chart resolves it now.
   */
  const toolOf = (sessionId: string, toolCallId: string, name: string): AnyTool | undefined => {
    const env = envOf(sessionId);
    return env.turns.callTools.get(toolCallId) ?? toolset.toolFor(env.config.agent, name);
  };

  const authorize = async (input: ToolEffectInput): Promise<AuthorizationDecision> => {
    const tool = toolOf(input.sessionId, input.toolCallId, input.name)!;
    const { permissionMode, workspaceDir } = envOf(input.sessionId).config;
    const decision = await tool.authorize!(input.args, {
      sessionId: input.sessionId,
      turnId: input.turnId,
      toolCallId: input.toolCallId,
      permissionMode,
      ...(workspaceDir !== null && { workspaceDir }),
    });
    return authorizationSchema.parse(decision);
  };

  const executeTool = async (input: ExecuteInput, cancellation: EffectCancellation): Promise<ExecutedResult> => {
    const env = envOf(input.sessionId);
    const started = env.turns.startedReads.get(input.toolCallId);
    // Issue 30: started as its approval batch cleared it, with its durable start and audit times: only its result is left to take.
    if (started?.cleared) {
      env.turns.startedReads.delete(input.toolCallId);
      return joinStartedRead(started, cancellation);
    }
    // Issue 26: a call that went through an approval says durably that it starts, before it runs.
    if (env.turns.approvalExpiries.has(input.toolCallId)) await recordStart(env, input);
    env.turns.audits.runStarted(input.toolCallId, now());
    // A read of this call may already be under way (RL-5): the call takes its result, and a cancel now reaches it.
    if (started) {
      env.turns.startedReads.delete(input.toolCallId);
      return audited(env, input.toolCallId, joinStartedRead(started, cancellation));
    }
    return audited(env, input.toolCallId, runWithinLimit(input, cancellation, true));
  };

  /** Each run is audited with how it ended (issue 30: a retry policy may run the tool again). */
  const audited = (env: SessionEnv, toolCallId: string, running: Promise<ExecutedResult>): Promise<ExecutedResult> => {
    const ran = (result?: ExecutedResult) => env.turns.audits.runEnded(toolCallId, now(), result);
    return running.then(
      (result) => (ran(result), result),
      (error: unknown) => {
        ran();
        throw error;
      },
    );
  };

  /** Issue 30: a call of an approval batch, run as it is cleared: as `executeTool` runs a call, before its chart takes it up. */
  const runCleared = (sessionId: string, turnId: string) => async (call: ToolCallPart, cleared: ClearedCall, cancellation: EffectCancellation): Promise<ExecutedResult> => {
    const env = envOf(sessionId);
    const input: ExecuteInput = { sessionId, turnId, toolCallId: call.id, name: call.name, args: cleared.args, approvedPaths: cleared.approvedPaths };
    if (env.turns.approvalExpiries.has(call.id)) await recordStart(env, input);
    env.turns.audits.runStarted(call.id, now());
    env.output.live.setToolStatus(call.id, 'running');
    return audited(env, call.id, runWithinLimit(input, cancellation, true));
  };

  /** Runs the tool under its time limit; `announce` sends its progress updates (a read started ahead of its call stays quiet). */
  const runWithinLimit = (input: ExecuteInput, cancellation: EffectCancellation, announce: boolean): Promise<ExecutedResult> => {
    const tool = toolOf(input.sessionId, input.toolCallId, input.name)!;
    const limit = tool.timeoutMs ?? envOf(input.sessionId).config.agent.toolTimeoutMs;
    return limit === null ? runTool(input, cancellation, announce) : withToolTimeLimit(limit, cancellation, (combined) => runTool(input, combined, announce));
  };

  const runTool = async (input: ExecuteInput, cancellation: EffectCancellation, announce: boolean): Promise<ExecutedResult> => {
    const tool = toolOf(input.sessionId, input.toolCallId, input.name)!;
    const env = envOf(input.sessionId);
    let returned: unknown;
    try {
      returned = await tool.execute(input.args, {
        sessionId: input.sessionId,
        turnId: input.turnId,
        toolCallId: input.toolCallId,
        // A getter, so the signal is made only if the tool reads it.
        get signal() {
          return cancellation.signal;
        },
        approvedPaths: input.approvedPaths,
        // The session's agent as the call runs (a switch inside the run takes effect from the next model call): what run_command's sandbox allows its commands.
        agentSandbox: env.config.agent.sandbox,
        ...(env.config.workspaceDir !== null && { workspaceDir: env.config.workspaceDir }),
        progress: (progress) => {
          if (announce && !cancellation.aborted) emit(env, input.turnId, { type: 'tool_call_progress', toolCallId: input.toolCallId, progress });
        },
      });
    } catch (error) {
      // Issue 30: an error the tool marks `transient` is a failed run a retry policy may try again; any other fails the call as before.
      if ((error as { transient?: unknown } | null)?.transient !== true) throw error;
      return { status: 'failed', content: `tool error: ${messageOf(error)}`, failure: 'transient' };
    }
    if (!isExecutionResult(returned)) return { status: 'failed', content: `tool returned an invalid result: ${JSON.stringify(returned) ?? String(returned)}` };
    return returned.status === 'failed' && returned.transient === true
      ? { status: 'failed', content: returned.content, failure: 'transient' }
      : { status: returned.status, content: returned.content };
  };

  const runControlTool = async (input: ToolEffectInput): Promise<ToolResult> => {
    if (input.name !== UPDATE_PLAN) return { status: 'failed', content: `unknown control tool '${input.name}'` };
    const env = envOf(input.sessionId);
    const plan = planSchema.parse(input.args);
    await deps.storage.savePlan({ turnId: input.turnId, sessionId: input.sessionId, plan, updatedAtMs: now() }, env.config.fence);
    emit(env, input.turnId, { type: 'plan_updated', plan });
    return { status: 'succeeded', content: 'Plan updated.' };
  };

  /** The result and its audit row, in one transaction (RL-4). */
  const writeResult = async (input: WriteResultInput): Promise<void> => {
    const env = envOf(input.sessionId);
    const { call, result } = input;
    env.turns.callTools.delete(call.id);
    const audit = toolCallAudit(input, env.turns.audits.take(call.id, now()), toolset.isControlTool(call.name), env.config.principal);
    env.turns.callSpanFacts.set(call.id, {
      ...(audit.decidedBy !== null && { permissionDecision: `${audit.verdict} by ${audit.decidedBy}` }),
      ...(audit.permissionWaitMs !== null && { permissionWaitMs: audit.permissionWaitMs }),
      ...(input.termination?.kind === 'failed' && input.termination.code === 'doom_loop' && { guardrails: ['doom_loop'] }),
    });
    const message = {
      role: 'tool',
      toolCallId: call.id,
      toolName: call.name,
      status: result.status,
      content: result.content,
      ...(input.termination && { endedTurn: input.termination }),
    } as const;
    await persistAndAppend(env, deps, input.turnId, message, undefined, audit);
  };

  /**
   * The chart's argument check (RT-15), made as each call starts. The call's registry tool is
   * resolved here, once, for the session's agent — a tool outside the agent's list is no tool — and
   * kept for the call (`callTools`), so what the chart decided on is what runs.
   */
  function validate(name: string, args: Record<string, unknown>, input: ToolCallInput): ValidationOutput {
    const env = envOf(input.sessionId);
    const tool = toolset.isControlTool(name) ? undefined : toolset.toolFor(env.config.agent, name);
    if (tool) env.turns.callTools.set(input.call.id, tool);
    return check(name, tool, args);
  }

  /** A rewrite by a dispatch hook is checked against the schema of the tool the call resolved. */
  const validateRewrite = (input: ToolEffectInput, args: Record<string, unknown>): ValidationOutput =>
    check(input.name, toolOf(input.sessionId, input.toolCallId, input.name), args);

  function check(name: string, tool: AnyTool | undefined, args: Record<string, unknown>): ValidationOutput {
    const schema = name === UPDATE_PLAN ? planSchema : Object.hasOwn(DELEGATION_SCHEMAS, name) ? DELEGATION_SCHEMAS[name] : tool?.input;
    if (!schema) return { ok: false, message: `no schema for '${name}'` };
    const parsed = schema.safeParse(args);
    return parsed.success ? { ok: true, args: parsed.data as Record<string, unknown> } : { ok: false, message: z.prettifyError(parsed.error) };
  }

  /** Each tool's own retry policy, resolved once per tool object (issue 30). */
  const toolPolicies = new WeakMap<AnyTool, ToolRetryPolicy>();
  const policyOf = (tool: AnyTool): ToolRetryPolicy | null => {
    if (tool.retryPolicy === undefined) return null;
    let policy = toolPolicies.get(tool);
    if (!policy) toolPolicies.set(tool, (policy = resolveRetryPolicy(tool.retryPolicy)));
    return policy;
  };

  /**
   * Issue 30: the retry policy of the call's registry tool — its own, else its agent's — as the call
   * starts (after the argument check resolved the tool), and whether the tool may run again: declared
   * idempotent, or a read. Control tools have none.
   */
  function retryFor(input: ToolCallInput): CallRetry | null {
    const env = envOf(input.sessionId);
    const tool = env.turns.callTools.get(input.call.id);
    const policy = tool ? (policyOf(tool) ?? env.config.agent.retryPolicy) : null;
    return policy && { ...policy, repeatable: tool!.idempotent ?? tool!.effect === 'read' };
  }

  /** Issue 24: the permission rule that decides the call's tool name for the session's agent, as the call starts. */
  function ruleFor(input: ToolCallInput): MatchedRule | null {
    const { permissions } = envOf(input.sessionId).config;
    return permissions.empty ? null : permissions.decide(input.call.name);
  }

  async function recordStart(env: SessionEnv, input: ExecuteInput): Promise<void> {
    const requested = env.turns.approvalRequests.get(input.toolCallId) ?? Promise.resolve();
    await requested.catch(() => undefined);
    await deps.storage.startApprovedCall({ turnId: input.turnId, toolCallId: input.toolCallId, decision: 'allow_once', principal: env.config.principal, answeredAtMs: now() });
  }

  function settleUnanswered(env: SessionEnv, context: ToolCallContext, decision: 'cancelled' | 'expired'): void {
    const requested = env.turns.approvalRequests.get(context.call.id) ?? Promise.resolve();
    const answer = { turnId: context.turnId, toolCallId: context.call.id, decision, principal: null, answeredAtMs: now() };
    requested
      .catch(() => undefined)
      .then(() => deps.storage.answerApproval(answer))
      .catch(() => undefined);
  }

  const callTool = (context: ToolCallContext) => envOf(context.sessionId).turns.callTools.get(context.call.id);

  function approvalPaths(context: ToolCallContext): string[] {
    const paths = callTool(context)?.approvalPaths?.(context.args);
    return Array.isArray(paths) ? paths.filter((p): p is string => typeof p === 'string') : [];
  }

  function effectOf(context: ToolCallContext) {
    return callTool(context)?.effect ?? 'execute';
  }

  const hooks = dispatchHookEffects(deps, validateRewrite);

  /**
   * Issue 30: a call started ahead (RL-5) ran the hooks already, per call, before its tool: its chart
   * takes that outcome rather than asking them twice. Any other call asks them now.
   */
  const beforeToolDispatch = (input: ToolEffectInput, cancellation: EffectCancellation): Promise<DispatchOutcome> => {
    const dispatch = envOf(input.sessionId).turns.startedReads.get(input.toolCallId)?.dispatch;
    return dispatch ?? hooks.beforeToolDispatch(input, cancellation);
  };

  /** Issue 26: when the call's approval expires: as stored for it (a resumed turn's), else by the agent's limit from now; null for never. */
  function expiryOf(context: ToolCallContext): number | null {
    const env = envOf(context.sessionId);
    const stored = env.turns.approvalExpiries.get(context.call.id);
    if (stored !== undefined) return stored;
    const timeout = env.config.agent.approvalTimeoutMs;
    return timeout === null ? null : now() + timeout;
  }

  return {
    /** The chart's argument check (RT-15) and permission rule (issue 24), made as each call starts: `toolCallChart(validate, ruleFor)`. */
    validate,
    ruleFor,
    retryFor,
    handlers: { authorize, executeTool, runControlTool, writeResult, beforeToolDispatch, afterToolDispatch: hooks.afterToolDispatch } satisfies Omit<EffectHandlers<ToolCallEffects>, 'delegate' | 'waitAgent'>,
    /** Runs a read ahead of its call (RL-5): the same tool run, limits and signal, without progress updates. */
    runRead: (sessionId: string, turnId: string) => (call: ToolCallPart, args: Record<string, unknown>, cancellation: EffectCancellation) =>
      runWithinLimit({ sessionId, turnId, toolCallId: call.id, name: call.name, args, approvedPaths: [] }, cancellation, false),
    /** Issue 30: a call started ahead runs the session's `beforeToolDispatch` hooks first, as its chart would. */
    runCleared,
    runDispatchHooks: (sessionId: string, turnId: string) => (call: ToolCallPart, args: Record<string, unknown>, cancellation: EffectCancellation) =>
      hooks.beforeToolDispatch({ sessionId, turnId, toolCallId: call.id, name: call.name, args }, cancellation),
    guards: {
      isControlTool: ({ context }: Ctx) => toolset.isControlTool(context.call.name),
      isRegistryTool: ({ context }: Ctx) => callTool(context) !== undefined,
      hasAuthorizeHook: ({ context }: Ctx) => callTool(context)?.authorize !== undefined,
      hasBeforeDispatchHooks: ({ context }: Ctx) => envOf(context.sessionId).config.hooks.beforeToolDispatch.length > 0,
      hasAfterDispatchHooks: ({ context }: Ctx) => envOf(context.sessionId).config.hooks.afterToolDispatch.length > 0,
      modeForbidsCall: ({ context }: Ctx) => modeForbids(envOf(context.sessionId).config.permissionMode, effectOf(context)),
      modeRequiresApproval: ({ context }: Ctx) => modeRequiresApproval(envOf(context.sessionId).config.permissionMode, effectOf(context)),
      approvalExpires: ({ context }: Ctx) => expiryOf(context) !== null,
    },
    delays: {
      /** Issue 26: what is left of the approval's wait: from its first request, which may have been made on another host. */
      approvalExpiry: ({ context }: Ctx) => {
        const env = envOf(context.sessionId);
        const stored = env.turns.approvalExpiries.get(context.call.id);
        return stored == null ? (env.config.agent.approvalTimeoutMs ?? 0) : Math.max(0, stored - now());
      },
    },
    actions: {
      assignApprovalPaths: approvalPathsAction(approvalPaths),
      startSpan: ({ context }: Ctx) => {
        // Issue 30: a call taken up after its approval batch was cleared opened its span then.
        if (context.cleared) return;
        const control = toolset.isControlTool(context.call.name);
        const tool = control ? undefined : callTool(context);
        const facts: SpanFacts = {
          toolCallId: context.call.id,
          toolType: control ? 'control' : tool?.mcpServer !== undefined ? 'extension' : 'function',
          // Content only for an observer that records it (issue 27): the call itself, not a copy.
          ...(trace.recordsContent && { content: { call: context.call } }),
        };
        trace.start(span(context, toolSpanId(context.turnId, context.call.id), 'tool_call', context.call.name, control ? 'control_tool' : 'registry', now(), facts));
      },
      emitToolCallStarted: ({ context }: Ctx) => {
        if (context.cleared) return;
        emit(envOf(context.sessionId), context.turnId, {
          type: 'tool_call_started',
          toolCallId: context.call.id,
          name: context.call.name,
          status: 'validating',
        });
      },
      setLiveStatus: ({ context }: Ctx, params: LiveStatusParams) => {
        const env = envOf(context.sessionId);
        if (params.status === 'waiting_permission') env.turns.audits.waitStarted(context.call.id, now());
        env.output.live.setToolStatus(context.call.id, params.status);
      },
      emitPermissionResolved: ({ context }: Ctx, params: PermissionResolvedParams) => {
        const env = envOf(context.sessionId);
        env.turns.audits.waitEnded(context.call.id, now());
        // Issue 26: an approval that ends unanswered is settled in storage too (an answer the session took is stored already).
        if (params.decision === 'cancelled' || params.decision === 'expired') settleUnanswered(env, context, params.decision);
        emit(env, context.turnId, { type: 'permission_resolved', toolCallId: context.call.id, decision: params.decision });
      },
      emitGuardrailTriggered: ({ context }: Ctx, params: GuardrailTriggered) => emitGuardrailTriggered(envOf(context.sessionId), context.turnId, params),
      finishCall: ({ context }: Ctx) => {
        const status = context.result?.status ?? 'outcome_unknown';
        const env = envOf(context.sessionId);
        const stored = env.turns.callSpanFacts.get(context.call.id);
        env.turns.callSpanFacts.delete(context.call.id);
        const facts = context.result && trace.recordsContent ? { ...stored, content: { result: context.result } } : stored;
        trace.end(toolSpanId(context.turnId, context.call.id), { status: spanStatus(status), errorCode: null, endedAtMs: now(), ...(facts && { facts }) });
        emit(envOf(context.sessionId), context.turnId, { type: 'tool_call_finished', toolCallId: context.call.id, status });
      },
    },
  };
}

function spanStatus(status: ToolResult['status']): Exclude<SpanStatus, 'running'> {
  return status;
}
