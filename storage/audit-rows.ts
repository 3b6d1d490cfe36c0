import type { Selectable } from 'kysely';
import type { AuditDecider, AuditEntry, AuditVerdict, ToolAttempt, ToolAudit } from '../src/protocol/audit.js';
import type { ToolResultStatus } from '../src/protocol/messages.js';
import { toMs, type ToolAuditView } from './schema.js';
import { decodeText, encodeText } from './text-codec.js';

/** The audit columns of a tool result's row (RL-4), written with the message in one insert; null for a message without one. */
export function auditColumns(audit: ToolAudit | null) {
  return {
    // The call id and name come from the model: they may hold what a PostgreSQL text column cannot.
    audit_tool_call_id: audit && encodeText(audit.toolCallId),
    audit_tool_name: audit && encodeText(audit.toolName),
    audit_status: audit?.status ?? null,
    audit_arguments_hash: audit?.argumentsHash ?? null,
    audit_dispatched_arguments_hash: audit?.dispatchedArgumentsHash ?? null,
    audit_verdict: audit?.verdict ?? null,
    audit_decided_by: audit?.decidedBy ?? null,
    audit_error_code: audit?.errorCode ?? null,
    audit_permission_wait_ms: audit?.permissionWaitMs ?? null,
    audit_execution_ms: audit?.executionMs ?? null,
    // Issue 25 (migration 008): a principal is checked storable where it enters (principalSchema).
    audit_principal: audit?.principal ?? null,
    // Issue 30 (migration 012): only a call run more than once has runs to list.
    audit_attempts: audit?.attempts ? JSON.stringify(audit.attempts) : null,
  };
}

const NO_AUDIT = [null, null, null, null, null, null, null, null, null, null, null, null];

/** `auditColumns`' values in its column order, without the object: the message insert lists them on every write. */
export function auditValues(audit: ToolAudit | null): unknown[] {
  if (!audit) return NO_AUDIT;
  return [
    encodeText(audit.toolCallId),
    encodeText(audit.toolName),
    audit.status,
    audit.argumentsHash,
    audit.dispatchedArgumentsHash,
    audit.verdict,
    audit.decidedBy,
    audit.errorCode,
    audit.permissionWaitMs,
    audit.executionMs,
    audit.principal,
    audit.attempts ? JSON.stringify(audit.attempts) : null,
  ];
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
    principal: row.principal,
    ...(row.attempts !== null && row.attempts !== undefined && { attempts: JSON.parse(row.attempts) as ToolAttempt[] }),
  };
}
