import { sql, type Kysely, type Migration } from 'kysely';

// Migrations are frozen snapshots: they take an untyped Kysely so later changes to
// `Database` never alter what an old migration does.
export const initial: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    // `bigint` is int8 in PostgreSQL and has INTEGER affinity in SQLite, so one spelling serves both.
    await db.schema
      .createTable('sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('agent', 'text', (c) => c.notNull())
      .addColumn('permission_mode', 'text', (c) => c.notNull())
      .addColumn('workspace_dir', 'text')
      .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('turns')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
      .addColumn('client_request_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error_code', 'text')
      .addColumn('error_message', 'text')
      .addColumn('final_text', 'text')
      .addColumn('started_at_ms', 'bigint', (c) => c.notNull())
      .addColumn('finished_at_ms', 'bigint')
      .execute();
    await db.schema.createIndex('ix_turns_session_request').on('turns').columns(['session_id', 'client_request_id']).execute();
    // RT-24: at most one running turn per session, enforced by the database rather than by the actor.
    await db.schema
      .createIndex('uq_turns_one_running_per_session')
      .on('turns')
      .column('session_id')
      .unique()
      .where(sql.ref('status'), '=', 'running')
      .execute();

    await db.schema
      .createTable('messages')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
      .addColumn('turn_id', 'text', (c) => c.notNull().references('turns.id'))
      .addColumn('sequence', 'integer', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
      .execute();
    // Doubles as the ordering index for listMessages.
    await db.schema.createIndex('uq_messages_session_sequence').on('messages').columns(['session_id', 'sequence']).unique().execute();

    await db.schema
      .createTable('trace_spans')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
      .addColumn('turn_id', 'text', (c) => c.notNull().references('turns.id'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error_code', 'text')
      .addColumn('started_at_ms', 'bigint', (c) => c.notNull())
      .addColumn('ended_at_ms', 'bigint')
      .execute();
    await db.schema.createIndex('ix_trace_spans_session').on('trace_spans').column('session_id').execute();

    await db.schema
      .createTable('turn_plans')
      .addColumn('turn_id', 'text', (c) => c.primaryKey().references('turns.id'))
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
      .addColumn('plan', 'text', (c) => c.notNull())
      .addColumn('updated_at_ms', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('ix_turn_plans_session_updated').on('turn_plans').columns(['session_id', 'updated_at_ms']).execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    // Reverse dependency order so foreign keys never point at a dropped table.
    for (const table of ['turn_plans', 'trace_spans', 'messages', 'turns', 'sessions']) {
      await db.schema.dropTable(table).ifExists().execute();
    }
  },
};
