import type { ResumePoint } from '../../machines/turn.effects.js';
import { SEND_AGENT_MESSAGE, SPAWN_AGENT } from '../../machines/delegation.js';
import type { ApprovalRow, TurnRow } from '../../storage/session-storage.js';
import type { HeldAnswer, ResumedTurn } from '../../machines/session.machine.js';
import { INTERRUPTED_RESULT_TEXT, type StoredMessage, type ToolCallPart } from '../protocol/messages.js';
import type { TurnResumeReason } from '../protocol/updates.js';
import type { TurnTermination } from '../protocol/outcome.js';
import type { PendingApproval } from '../protocol/session-snapshot.js';
import type { AnyTool } from '../tools/define-tool.js';
import { skippedCallAudit } from './tool-audit.js';
import type { SessionConfig } from './session-config.js';
import { modeForbids, modeRequiresApproval } from '../tools/permission-policy.js';

/**
 * Issue 26: going on with a turn its host left running. Storage has every message the turn wrote:
 * its responses, and the results its calls got. The turn goes on from the last of them — the calls
 * of its last response still without a result, or a model call again — under its own id and run.
 *
 * Which call may have run: calls run in order, so of the calls without a result only the first one
 * can have started — unless the agent runs calls side by side (RL-5; issue 30: writes and commands
 * too), when any call that needed no approval may have been started ahead of its chart. A
 * call whose approval is still awaited, was denied, or was allowed but stored no start, had not run;
 * nor had one that needs an approval under the session's mode and rules and never asked for it. The one that may have run runs
 * again if the tool says that is safe (`idempotent`, reads by default); otherwise it gets the
 * `interrupted` result the model reads for a call that never reported, and it never runs twice.
 */

/** Delegation control tools start or message a child: not safe to repeat. A wait, a plan update are. */
const REPEATABLE_CONTROL = (name: string) => name !== SPAWN_AGENT && name !== SEND_AGENT_MESSAGE;

/** Whether running the call again after a crash is safe: the tool's word, else reads only; a name no tool has fails the same way twice. */
export function isIdempotent(tool: AnyTool | undefined, name: string, isControlTool: boolean): boolean {
  if (isControlTool) return REPEATABLE_CONTROL(name);
  if (!tool) return true;
  return tool.idempotent ?? tool.effect === 'read';
}

/**
 * A call that cannot run without an approval (a rule asks or denies, or the mode asks or forbids)
 * and never asked for one did not run. A tool with its own `authorize` hook may have been allowed
 * by it: that one is not known not to have run.
 */
export function neverRunsUnasked(config: SessionConfig, tool: AnyTool | undefined, name: string): boolean {
  if (!tool || tool.authorize) return false;
  const rule = config.permissions.empty ? null : config.permissions.decide(name);
  if (rule) return rule.decision !== 'allow';
  return modeForbids(config.permissionMode, tool.effect) || modeRequiresApproval(config.permissionMode, tool.effect);
}

/** What the opener learns from storage about a turn to resume: the chart's part, and the calls that had not run. */
export interface TurnToResume {
  chart: ResumedTurn;
  notRun: Set<string>;
  /** Calls that asked for an approval (whatever came of it). */
  asked: Set<string>;
  expiries: Map<string, number | null>;
  /** The first approval still awaited: the snapshot shows it pending from the opening on. */
  pending: PendingApproval | null;
  /** Issue 27: the traceparent stored with the turn: its resumed span joins the same trace. */
  traceParent: string | null;
}

/** Reads the turn's stored approvals: awaited ones, answers not yet acted on, and what that says of its calls. */
export function turnToResume(turn: TurnRow, messages: readonly StoredMessage[], approvals: readonly ApprovalRow[], reason: TurnResumeReason): TurnToResume {
  const results = resultsOf(messages, turn.id);
  const awaited: string[] = [];
  const answered: Record<string, HeldAnswer> = {};
  const notRun = new Set<string>();
  const asked = new Set<string>();
  const expiries = new Map<string, number | null>();
  let pending: PendingApproval | null = null;
  for (const approval of approvals) {
    asked.add(approval.toolCallId);
    expiries.set(approval.toolCallId, approval.expiresAtMs);
    if (results.has(approval.toolCallId)) continue;
    if (approval.decision === null) {
      pending ??= { toolCallId: approval.toolCallId, name: approval.toolName, paths: approval.paths };
      awaited.push(approval.toolCallId);
      notRun.add(approval.toolCallId);
    } else if (approval.decision === 'allow_once' || approval.decision === 'deny') {
      answered[approval.toolCallId] = { decision: approval.decision, ...(approval.answeredBy !== null && { principal: approval.answeredBy }) };
      // An allowed call stores its start before it runs: without one, it never began.
      if (approval.decision === 'deny' || !approval.startedAtMs) notRun.add(approval.toolCallId);
    }
  }
  return { chart: { turnId: turn.id, clientRequestId: turn.clientRequestId, reason, awaited, answered }, notRun, asked, expiries, pending, traceParent: turn.traceParent ?? null };
}

/** Where the turn goes on, and the calls (if any) that must be given their `interrupted` results first. */
export interface ResumePlan {
  point: ResumePoint;
  /**
   * The calls that may have run and may not run again, in provider order: the first call without a
   * result, or (issue 30) with parallel calls on, every call from it up to the last such one that
   * may have been started ahead of its chart — a write or a command too.
   */
  interrupted: ToolCallPart[];
  /** The sequence of the turn's first stored message. */
  startSequence: number | null;
}

export function planResumption(
  messages: readonly StoredMessage[],
  turnId: string,
  notRun: (call: ToolCallPart) => boolean,
  repeatable: (call: ToolCallPart) => boolean,
  /** Issue 30: whether the session's agent runs calls side by side (RL-5), so more than the first may have started. */
  parallel = false,
): ResumePlan {
  const own = messages.filter((m) => m.turnId === turnId);
  const startSequence = own[0]?.sequence ?? null;
  let responses = 0;
  let last: StoredMessage | null = null;
  for (const m of own) {
    if (m.message.role === 'assistant') {
      responses += 1;
      last = m;
    }
  }
  const modelCallIndex = responses + 1;
  if (!last || last.message.role !== 'assistant') return { point: { response: null, toolIndex: 0, modelCallIndex }, interrupted: [], startSequence };
  const { text, reasoning, toolCalls, providerData } = last.message;
  const response = { text, reasoning, toolCalls, ...(providerData && { providerData }) };
  const results = resultsOf(own, turnId);
  const first = toolCalls.findIndex((call) => !results.has(call.id));
  if (first === -1) return { point: { response, toolIndex: toolCalls.length, modelCallIndex }, interrupted: [], startSequence };
  const mayRepeatHarm = (call: ToolCallPart) => !notRun(call) && !repeatable(call);
  // Calls run in order, but a run of calls started ahead (RL-5) may reach past the first: up to the last one that may have run and may not run again.
  const through = parallel ? lastIndexWhere(toolCalls, first, mayRepeatHarm) : mayRepeatHarm(toolCalls[first]!) ? first : -1;
  if (through === -1) return { point: { response, toolIndex: first, modelCallIndex }, interrupted: [], startSequence };
  return { point: { response, toolIndex: through + 1, modelCallIndex }, interrupted: toolCalls.slice(first, through + 1), startSequence };
}

/** The last index from `from` on whose call holds, or -1. */
function lastIndexWhere(calls: readonly ToolCallPart[], from: number, holds: (call: ToolCallPart) => boolean): number {
  for (let i = calls.length - 1; i >= from; i--) if (holds(calls[i]!)) return i;
  return -1;
}

/** How the turn ended, when one of its stored results ended it and its host went away before storing the end. */
export function storedEnding(messages: readonly StoredMessage[], turnId: string): TurnTermination | null {
  for (const m of messages) if (m.turnId === turnId && m.message.role === 'tool' && m.message.endedTurn) return m.message.endedTurn;
  return null;
}

/** The `interrupted` result of a call that may have run before its host went away, with its audit row. */
export function interruptedResult(call: ToolCallPart, owner: string | null) {
  const message = { role: 'tool', toolCallId: call.id, toolName: call.name, status: 'cancelled', content: INTERRUPTED_RESULT_TEXT } as const;
  return { message, audit: { ...skippedCallAudit(call, owner), errorCode: 'process_restart' } };
}

function resultsOf(messages: readonly StoredMessage[], turnId: string): Set<string> {
  const results = new Set<string>();
  for (const m of messages) if (m.turnId === turnId && m.message.role === 'tool') results.add(m.message.toolCallId);
  return results;
}
