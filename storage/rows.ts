import type { Selectable } from 'kysely';
import type { ChatMessage, StoredMessage } from '../src/protocol/messages.js';
import type { StoredTurnStatus } from '../src/protocol/outcome.js';
import type { SpanKind, SpanSource, SpanStatus, TraceSpan } from '../src/protocol/trace.js';
import { decodeText, encodeText } from './text-codec.js';
import { decodeTrackers } from './trackers-codec.js';
import { toMs, type MessagesTable, type SessionsTable, type TraceSpansTable, type TurnsTable } from './schema.js';
import type { QueuedTurnRow, RunRow, SessionRow, TurnRow } from './session-storage.js';
import type { BusyPolicy, PermissionMode, TriggerType } from '../src/protocol/commands.js';

/** Rows to and from the tables; the casts trust that every value was written through this storage. */

export function rowToSession(row: Selectable<SessionsTable>): SessionRow {
  return {
    id: row.id,
    agent: row.agent,
    permissionMode: row.permission_mode as PermissionMode,
    workspaceDir: row.workspace_dir,
    createdAtMs: toMs(row.created_at_ms),
    busyPolicy: row.busy_policy as BusyPolicy,
    updateSequence: Number(row.update_sequence),
    ...(Number(row.non_interactive) === 1 && { nonInteractive: true }),
    ...(row.principal !== null && row.principal !== undefined && { principal: row.principal }),
    ...(Number(row.quota_exempt) === 1 && { quotaExempt: true }),
    ...(Number(row.resume_turns) === 1 && { resumeTurns: true }),
    ...(row.parent_session_id !== null &&
      row.parent_session_id !== undefined && {
        parent: { sessionId: row.parent_session_id, turnId: row.parent_turn_id ?? '', toolCallId: row.parent_tool_call_id ?? '' },
      }),
  };
}

export function messageToRow(m: StoredMessage) {
  return {
    id: m.id,
    session_id: m.sessionId,
    turn_id: m.turnId,
    sequence: m.sequence,
    role: m.message.role,
    // Only user messages carry a kind; the column exists so history can be filtered without parsing JSON.
    kind: m.message.role === 'user' ? m.message.kind : 'normal',
    content: JSON.stringify(m.message),
    created_at_ms: m.createdAtMs,
  };
}

/** `messageToRow`'s values in its column order, without the object: for the statements every step runs. */
export function messageValues(m: StoredMessage): unknown[] {
  return [m.id, m.sessionId, m.turnId, m.sequence, m.message.role, m.message.role === 'user' ? m.message.kind : 'normal', JSON.stringify(m.message), m.createdAtMs];
}

export function rowToMessage(row: Selectable<MessagesTable>): StoredMessage {
  return {
    id: row.id,
    sessionId: row.session_id,
    turnId: row.turn_id,
    sequence: Number(row.sequence),
    createdAtMs: toMs(row.created_at_ms),
    message: JSON.parse(row.content) as ChatMessage,
  };
}

export type TurnWithRun = Selectable<TurnsTable> & { run_id: string | null; trigger_type: string | null };

export function rowToTurn(row: TurnWithRun): TurnRow {
  const trackers = decodeTrackers(row.guardrail_trackers);
  return {
    id: row.id,
    sessionId: row.session_id,
    clientRequestId: row.client_request_id,
    status: row.status as StoredTurnStatus,
    runId: row.run_id,
    trigger: row.trigger_type as TriggerType | null,
    errorCode: row.error_code,
    errorMessage: decodeText(row.error_message),
    finalText: decodeText(row.final_text),
    startedAtMs: toMs(row.started_at_ms),
    finishedAtMs: toMs(row.finished_at_ms),
    ...(trackers && { trackers }),
    ...(row.cancel_requested_at_ms !== null && row.cancel_requested_at_ms !== undefined && { cancelRequestedAtMs: toMs(row.cancel_requested_at_ms) }),
    ...(row.trace_parent && { traceParent: row.trace_parent }),
  };
}

/** A turn joined to its run (issue 30's run resource): the run's own columns besides the turn's. */
export function rowToRun(row: TurnWithRun & { run_id: string; trigger_type: string; run_created_at_ms: number | string }): RunRow {
  return { ...rowToTurn(row), runId: row.run_id, trigger: row.trigger_type as TriggerType, runCreatedAtMs: toMs(row.run_created_at_ms) };
}

export function rowToQueuedTurn(row: TurnWithRun): QueuedTurnRow {
  return {
    id: row.id,
    sessionId: row.session_id,
    clientRequestId: row.client_request_id,
    runId: row.run_id ?? '',
    trigger: (row.trigger_type ?? 'message') as TriggerType,
    input: JSON.parse(row.input ?? '[]') as ChatMessage[],
    queuedAtMs: toMs(row.started_at_ms),
    ...(row.trace_parent && { traceParent: row.trace_parent }),
  };
}

export function rowToSpan(row: Selectable<TraceSpansTable>): TraceSpan {
  return {
    id: row.id,
    sessionId: row.session_id,
    turnId: row.turn_id,
    kind: row.kind as SpanKind,
    name: decodeText(row.name),
    source: row.source as SpanSource,
    status: row.status as SpanStatus,
    errorCode: decodeText(row.error_code),
    startedAtMs: toMs(row.started_at_ms),
    endedAtMs: toMs(row.ended_at_ms),
  };
}

export function spanToRow(span: TraceSpan) {
  return {
    id: span.id,
    session_id: span.sessionId,
    turn_id: span.turnId,
    kind: span.kind,
    name: encodeText(span.name),
    source: span.source,
    status: span.status,
    error_code: encodeText(span.errorCode),
    started_at_ms: span.startedAtMs,
    ended_at_ms: span.endedAtMs,
  };
}
