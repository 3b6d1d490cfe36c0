import type { Kysely, Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * RL-4: one audit row per tool result, written in the same transaction as the result message and
 * keyed by that message's id, so a result without its audit row (or the reverse) cannot be stored.
 */
export const audit: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('tool_audit')
      .addColumn('id', 'text', (c) => c.primaryKey().references('messages.id'))
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
      .addColumn('turn_id', 'text', (c) => c.notNull().references('turns.id'))
      .addColumn('sequence', 'integer', (c) => c.notNull())
      .addColumn('tool_call_id', 'text', (c) => c.notNull())
      .addColumn('tool_name', 'text', (c) => c.notNull())
      .addColumn('arguments_hash', 'text', (c) => c.notNull())
      .addColumn('dispatched_arguments_hash', 'text')
      .addColumn('verdict', 'text', (c) => c.notNull())
      .addColumn('decided_by', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error_code', 'text')
      .addColumn('permission_wait_ms', 'bigint')
      .addColumn('execution_ms', 'bigint')
      .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
      .execute();
    // The log is read per session, newest first, paged by sequence.
    await db.schema.createIndex('uq_tool_audit_session_sequence').on('tool_audit').columns(['session_id', 'sequence']).unique().execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('tool_audit').ifExists().execute();
  },
};
