import { sql, type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * Issue 25: many users on one service. Every session (and with it its turns, sub-agents and chat)
 * and every task is stored with the principal that owns it, and a session list is read per owner,
 * newest first. Rows from before have no owner: only an admin sees them. Each audit row names the
 * principal the dispatch acted for, or that answered its approval.
 */
export const principals: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('sessions').addColumn('principal', 'text').execute();
    await db.schema.createIndex('ix_sessions_principal_created').on('sessions').columns(['principal', 'created_at_ms', 'id']).execute();
    await db.schema.alterTable('tasks').addColumn('principal', 'text').execute();
    await db.schema.alterTable('messages').addColumn('audit_principal', 'text').execute();
    // The audit log's view (004) gains the column: a view is dropped and created again, on both dialects.
    await sql`drop view if exists tool_audit`.execute(db);
    await createAuditView(db, true);
  },

  async down(db: Kysely<unknown>): Promise<void> {
    // The view names the column: it goes first, and comes back as 004 made it.
    await sql`drop view if exists tool_audit`.execute(db);
    await db.schema.alterTable('messages').dropColumn('audit_principal').execute();
    await createAuditView(db, false);
    await db.schema.alterTable('tasks').dropColumn('principal').execute();
    await db.schema.dropIndex('ix_sessions_principal_created').ifExists().execute();
    await db.schema.alterTable('sessions').dropColumn('principal').execute();
  },
};

/** `tool_audit` as migration 004 made it, with `principal` when `withPrincipal`. */
async function createAuditView(db: Kysely<unknown>, withPrincipal: boolean): Promise<void> {
  const principal = withPrincipal ? sql`, audit_principal as principal` : sql``;
  await sql`create view tool_audit as
    select id, session_id, turn_id, sequence, created_at_ms,
      audit_tool_call_id as tool_call_id, audit_tool_name as tool_name, audit_status as status,
      audit_arguments_hash as arguments_hash, audit_dispatched_arguments_hash as dispatched_arguments_hash,
      audit_verdict as verdict, audit_decided_by as decided_by, audit_error_code as error_code,
      audit_permission_wait_ms as permission_wait_ms, audit_execution_ms as execution_ms${principal}
    from messages where audit_verdict is not null`.execute(db);
}
