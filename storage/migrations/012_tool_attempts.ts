import { sql, type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * Issue 30: a tool call its retry policy ran more than once says so in its audit row — each run's
 * status, why it failed (`timeout`, `transient`) and how long it took — as JSON, null for a call
 * that ran once or never. The audit log's view gains the column.
 */
export const toolAttempts: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('messages').addColumn('audit_attempts', 'text').execute();
    await sql`drop view if exists tool_audit`.execute(db);
    await createAuditView(db, true);
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await sql`drop view if exists tool_audit`.execute(db);
    await db.schema.alterTable('messages').dropColumn('audit_attempts').execute();
    await createAuditView(db, false);
  },
};

/** `tool_audit` as migration 008 made it, with `attempts` when `withAttempts`. */
async function createAuditView(db: Kysely<unknown>, withAttempts: boolean): Promise<void> {
  const attempts = withAttempts ? sql`, audit_attempts as attempts` : sql``;
  await sql`create view tool_audit as
    select id, session_id, turn_id, sequence, created_at_ms,
      audit_tool_call_id as tool_call_id, audit_tool_name as tool_name, audit_status as status,
      audit_arguments_hash as arguments_hash, audit_dispatched_arguments_hash as dispatched_arguments_hash,
      audit_verdict as verdict, audit_decided_by as decided_by, audit_error_code as error_code,
      audit_permission_wait_ms as permission_wait_ms, audit_execution_ms as execution_ms, audit_principal as principal${attempts}
    from messages where audit_verdict is not null`.execute(db);
}
