import type { Insertable, Selectable } from 'kysely';
import type { AuditDecider, AuditEntry, AuditVerdict, ToolAudit } from '../src/protocol/audit.js';
import type { StoredMessage, ToolResultStatus } from '../src/protocol/messages.js';
import { toMs, type ToolAuditTable } from './schema.js';
import { decodeText, encodeText } from './text-codec.js';

/** The audit row of a tool result message: keyed by the message, placed at its sequence. */
export function auditToRow(message: StoredMessage, audit: ToolAudit): Insertable<ToolAuditTable> {
  return {
    id: message.id,
    session_id: message.sessionId,
    turn_id: message.turnId,
    sequence: message.sequence,
    // The call id and name come from the model: they may hold what a PostgreSQL text column cannot.
    tool_call_id: encodeText(audit.toolCallId),
    tool_name: encodeText(audit.toolName),
    arguments_hash: audit.argumentsHash,
    dispatched_arguments_hash: audit.dispatchedArgumentsHash,
    verdict: audit.verdict,
    decided_by: audit.decidedBy,
    status: audit.status,
    error_code: audit.errorCode,
    permission_wait_ms: audit.permissionWaitMs,
    execution_ms: audit.executionMs,
    created_at_ms: message.createdAtMs,
  };
}

export function rowToAudit(row: Selectable<ToolAuditTable>): AuditEntry {
  return {
    id: row.id,
    sessionId: row.session_id,
    turnId: row.turn_id,
    sequence: Number(row.sequence),
    createdAtMs: toMs(row.created_at_ms),
    toolCallId: decodeText(row.tool_call_id),
    toolName: decodeText(row.tool_name),
    argumentsHash: row.arguments_hash,
    dispatchedArgumentsHash: row.dispatched_arguments_hash,
    verdict: row.verdict as AuditVerdict,
    decidedBy: row.decided_by as AuditDecider | null,
    status: row.status as ToolResultStatus,
    errorCode: row.error_code,
    permissionWaitMs: toMs(row.permission_wait_ms),
    executionMs: toMs(row.execution_ms),
  };
}
