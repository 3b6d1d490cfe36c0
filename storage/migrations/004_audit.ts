import { sql, type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * RL-4: the tool dispatch audit. Each tool result message carries its audit in columns of its own
 * row, so the result and its audit are one insert — one fenced statement, atomic without a
 * transaction (a transaction of two inserts cost a tool step about 100 µs more on SQLite; this
 * costs about 15). The view `tool_audit` is the log as a table: one row per audited result.
 */
const COLUMNS: [string, 'text' | 'bigint'][] = [
  ['audit_tool_call_id', 'text'],
  ['audit_tool_name', 'text'],
  ['audit_status', 'text'],
  ['audit_arguments_hash', 'text'],
  ['audit_dispatched_arguments_hash', 'text'],
  // Set on every audited row: it is what makes a message an audit row.
  ['audit_verdict', 'text'],
  ['audit_decided_by', 'text'],
  ['audit_error_code', 'text'],
  ['audit_permission_wait_ms', 'bigint'],
  ['audit_execution_ms', 'bigint'],
];

export const audit: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    for (const [name, type] of COLUMNS) await db.schema.alterTable('messages').addColumn(name, type).execute();
    // The log is read per session, newest first, paged by sequence: only audited rows are indexed.
    await db.schema
      .createIndex('ix_messages_audit')
      .on('messages')
      .columns(['session_id', 'sequence'])
      .where(sql.ref('audit_verdict'), 'is not', null)
      .execute();
    await sql`create view tool_audit as
      select id, session_id, turn_id, sequence, created_at_ms,
        audit_tool_call_id as tool_call_id, audit_tool_name as tool_name, audit_status as status,
        audit_arguments_hash as arguments_hash, audit_dispatched_arguments_hash as dispatched_arguments_hash,
        audit_verdict as verdict, audit_decided_by as decided_by, audit_error_code as error_code,
        audit_permission_wait_ms as permission_wait_ms, audit_execution_ms as execution_ms
      from messages where audit_verdict is not null`.execute(db);
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await sql`drop view if exists tool_audit`.execute(db);
    await db.schema.dropIndex('ix_messages_audit').ifExists().execute();
    for (const [name] of [...COLUMNS].reverse()) await db.schema.alterTable('messages').dropColumn(name).execute();
  },
};
