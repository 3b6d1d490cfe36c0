import type { EventObject } from 'xstate';
import type { AuditDecision } from '../src/protocol/audit.js';
import type { ToolCallPart } from '../src/protocol/messages.js';
import type { AuthorizationDecision, ToolResult } from '../src/protocol/tool-result.js';
import type { PermissionDecision } from '../src/protocol/updates.js';
import type { MatchedRule } from '../src/protocol/permission-rule.js';
import type { ToolFailureKind, ToolRetryPolicy } from '../src/protocol/tool-retry.js';
import type { ToolCallInput, TurnTermination } from './tool-call.contract.js';
import { doneOutput, failedError } from './effect-port.js';

/**
 * The tool-call chart's effect contract (machines/tool-call.machine.ts): the effects it asks the
 * runtime for, with their inputs; the replies it waits for, and how its guards and actions read
 * them; and the shapes of what else the runtime supplies — the argument validator the chart is
 * built around, the params of the actions it names. The runtime's side is
 * src/runtime/tool-call-effects.ts (with dispatch-hooks.ts and delegation-effects.ts).
 */

export interface ToolEffectInput {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  name: string;
  args: Record<string, unknown>;
}

export interface ExecuteInput extends ToolEffectInput {
  approvedPaths: string[];
}

export interface WriteResultInput {
  sessionId: string;
  turnId: string;
  call: ToolCallPart;
  result: ToolResult;
  /** What the audit row records besides the durations the runtime measured (RL-4). */
  args: Record<string, unknown>;
  argumentsParsed: boolean;
  decision: AuditDecision | null;
  hookError: string | null;
  rewritten: boolean;
  /** The result ends the turn: stored with it (issue 26). */
  termination: TurnTermination | null;
}

export interface AfterDispatchInput extends ToolEffectInput {
  result: ToolResult;
}

/** What the `beforeToolDispatch` hooks decided, the rewritten arguments already checked against the tool's schema. */
export type DispatchOutcome =
  | { decision: 'allow' }
  | { decision: 'deny'; reason: string }
  | { decision: 'rewrite'; args: Record<string, unknown> }
  | { decision: 'invalid_rewrite'; message: string };

/** What `executeTool` answers: the tool's result, and (issue 30) whether it failed in a way a retry policy may try again. */
export interface ExecutedResult extends ToolResult {
  failure?: ToolFailureKind;
}

/**
 * Issue 30: the retry policy that governs this call (the tool's, else its agent's), and whether the
 * tool may run again (`repeatable`: declared idempotent, or a read). Null: no policy — a failure is
 * written as it is, as before.
 */
export interface CallRetry extends ToolRetryPolicy {
  repeatable: boolean;
}

/** Issue 30: the runtime resolves the call's retry policy as the call starts, like its permission rule. */
export type RetryResolver = (input: ToolCallInput) => CallRetry | null;

/** What `waitAgent` answers: the child's answer, or that it was still running when the wait's time ran out. */
export type WaitAgentOutput = { timedOut: false; result: ToolResult } | { timedOut: true; result: ToolResult };

/** The effects a tool call asks the runtime for, with their inputs and outputs. */
export type ToolCallEffects = {
  /** The tool's own `authorize` hook (RT-16). */
  authorize: { input: ToolEffectInput; output: AuthorizationDecision };
  /** Runs a registry tool under this call's signal and approved paths. */
  executeTool: { input: ExecuteInput; output: ExecutedResult };
  /** Runs a control tool such as `update_plan` (RT-22). */
  runControlTool: { input: ToolEffectInput; output: ToolResult };
  /** `spawn_agent` (a child session and its first turn) or `send_agent_message`: answers at once. */
  delegate: { input: ToolEffectInput; output: ToolResult };
  /** `wait_agent`: the child's answer, or a timeout on the runtime's chart clock; a cancel aborts the wait. */
  waitAgent: { input: ToolEffectInput; output: WaitAgentOutput };
  /** Writes the result and its audit row, appends it to the conversation (RT-12, RL-4). */
  writeResult: { input: WriteResultInput; output: void };
  /** The runtime's then the agent's `beforeToolDispatch` hooks (RL-4). */
  beforeToolDispatch: { input: ToolEffectInput; output: DispatchOutcome };
  /** The runtime's then the agent's `afterToolDispatch` hooks: they see the result (RL-4). */
  afterToolDispatch: { input: AfterDispatchInput; output: void };
};

export type ValidationOutput = { ok: true; args: Record<string, unknown> } | { ok: false; message: string };

/**
 * Checks parsed arguments against the schema of the tool the name picks (RT-15); the runtime's toolset
 * supplies it. It gets the call's input too: the runtime resolves the call's tool here, once, for the
 * session's agent, and the call keeps that tool to the end whatever its tool sources do meanwhile.
 */
export type ArgumentValidator = (name: string, args: Record<string, unknown>, input: ToolCallInput) => ValidationOutput;

/**
 * Issue 24: the permission rule that decides this call's tool name for the session's agent (the
 * most specific matching pattern), or null; the runtime supplies it as the call starts, so the
 * chart's rule guards read a value in its context.
 */
export type RuleResolver = (input: ToolCallInput) => MatchedRule | null;

/** The params of the runtime's `setLiveStatus`. */
export interface LiveStatusParams {
  status: 'waiting_permission' | 'running';
}

/** The params of the runtime's `emitPermissionResolved`: the user's answer, or why the wait ended without one. */
export interface PermissionResolvedParams {
  decision: PermissionDecision | 'cancelled' | 'actor_stopped' | 'expired';
}

// The replies, as the chart reads them. Each is read only on the reply it names: the guards and
// actions that call these run on `effect.done` / `effect.failed` transitions of the state that asked.

/** The result of `executeTool`, `runControlTool` or `delegate`. */
export const toolResultOf = (event: EventObject) => doneOutput<ToolResult>(event)!;
/** The result of `executeTool`, with the kind of its failure when it has one. */
export const executedOf = (event: EventObject) => doneOutput<ExecutedResult>(event)!;
/** What the `beforeToolDispatch` hooks decided. */
export const dispatchOf = (event: EventObject) => doneOutput<DispatchOutcome>(event)!;
/** What the tool's `authorize` hook decided. */
export const authorizationOf = (event: EventObject) => doneOutput<AuthorizationDecision>(event)!;
/** What `waitAgent` answered. */
export const waitOf = (event: EventObject) => doneOutput<WaitAgentOutput>(event)!;
/** Whether `waitAgent` answered that its time ran out; false for any other event. */
export const isWaitTimeout = (event: EventObject) => event.type === 'effect.done' && waitOf(event)?.timedOut === true;
/** The error of a failed effect. */
export const errorOf = (event: EventObject) => failedError(event);
