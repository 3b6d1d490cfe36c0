import type { Selectable } from 'kysely';
import type { AuditDecider, AuditEntry, AuditVerdict, ToolAudit } from '../src/protocol/audit.js';
import type { ToolResultStatus } from '../src/protocol/messages.js';
import { toMs, type ToolAuditView } from './schema.js';
import { decodeText, encodeText } from './text-codec.js';

/** The audit columns of a tool result's row (RL-4), written with the message in one insert. */
export function auditColumns(audit: ToolAudit) {
  return {
    // The call id and name come from the model: they may hold what a PostgreSQL text column cannot.
    audit_tool_call_id: encodeText(audit.toolCallId),
    audit_tool_name: encodeText(audit.toolName),
    audit_status: audit.status,
    audit_arguments_hash: audit.argumentsHash,
    audit_dispatched_arguments_hash: audit.dispatchedArgumentsHash,
    audit_verdict: audit.verdict,
    audit_decided_by: audit.decidedBy,
    audit_error_code: audit.errorCode,
    audit_permission_wait_ms: audit.permissionWaitMs,
    audit_execution_ms: audit.executionMs,
  };
}

export function rowToAudit(row: Selectable<ToolAuditView>): AuditEntry {
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
