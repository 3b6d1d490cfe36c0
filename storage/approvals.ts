import { sql, type Kysely } from 'kysely';
import { databaseNowMs, type DialectName } from './dialect.js';
import { toMs, type Database } from './schema.js';
import type { ApprovalAnswer, ApprovalRow } from './session-storage.js';

/**
 * Issue 26: approvals in the database, so that a turn waiting for a human outlives its host. Neither
 * write is fenced: a request is the same whoever writes it (the first one is kept, with its expiry),
 * and an answer is the human's and is kept whichever host took it; both only ever fill an empty slot.
 */

export async function requestApproval(db: Kysely<Database>, row: ApprovalRow): Promise<void> {
  await db
    .insertInto('approvals')
    .values({
      turn_id: row.turnId,
      tool_call_id: row.toolCallId,
      session_id: row.sessionId,
      tool_name: row.toolName,
      paths: JSON.stringify(row.paths),
      requested_at_ms: row.requestedAtMs,
      expires_at_ms: row.expiresAtMs,
    })
    .onConflict((oc) => oc.columns(['turn_id', 'tool_call_id']).doNothing())
    .execute();
}

/** Records the first answer (or how the request ended unanswered); a later one changes nothing. */
export async function answerApproval(db: Kysely<Database>, answer: ApprovalAnswer): Promise<void> {
  await db
    .updateTable('approvals')
    .set({ decision: answer.decision, answered_by: answer.principal, answered_at_ms: answer.answeredAtMs })
    .where('turn_id', '=', answer.turnId)
    .where('tool_call_id', '=', answer.toolCallId)
    .where('decision', 'is', null)
    .execute();
}

export async function startApprovedCall(db: Kysely<Database>, answer: ApprovalAnswer): Promise<void> {
  await db
    .updateTable('approvals')
    .set({
      started_at_ms: answer.answeredAtMs,
      decision: sql<string>`coalesce(decision, ${answer.decision})`,
      answered_by: sql<string | null>`coalesce(answered_by, ${answer.principal})`,
      answered_at_ms: sql<number>`coalesce(answered_at_ms, ${answer.answeredAtMs})`,
    })
    .where('turn_id', '=', answer.turnId)
    .where('tool_call_id', '=', answer.toolCallId)
    .execute();
}

export async function listApprovals(db: Kysely<Database>, turnId: string): Promise<ApprovalRow[]> {
  const rows = await db.selectFrom('approvals').selectAll().where('turn_id', '=', turnId).orderBy('requested_at_ms').execute();
  return rows.map((r) => ({
    turnId: r.turn_id,
    toolCallId: r.tool_call_id,
    sessionId: r.session_id,
    toolName: r.tool_name,
    paths: JSON.parse(r.paths) as string[],
    requestedAtMs: toMs(r.requested_at_ms),
    expiresAtMs: toMs(r.expires_at_ms),
    decision: (r.decision as ApprovalRow['decision']) ?? null,
    answeredBy: r.answered_by,
    startedAtMs: toMs(r.started_at_ms),
  }));
}

/** An unanswered approval that has not expired (on the database's clock): the session waits for a human, not for a host. */
export function waitsForHuman(dialect: DialectName) {
  return sql<boolean>`exists (select 1 from approvals where approvals.session_id = sessions.id and approvals.decision is null and (approvals.expires_at_ms is null or approvals.expires_at_ms > ${databaseNowMs(dialect)}))`;
}
