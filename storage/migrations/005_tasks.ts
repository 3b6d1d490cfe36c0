import { sql, type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * Tasks (seed 002): the task row with its lifecycle state, the control request waiting for its
 * worker, and the last event sequence issued; the task's events, each stored before it is published
 * (the outbox: `published_at_ms` stays null until the broker confirms); and where each named event
 * consumer has got to, per task session.
 */
export const tasks: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('tasks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('spec', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('risk_level', 'text')
      .addColumn('agent_session_id', 'text', (c) => c.references('sessions.id'))
      .addColumn('turns_done', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_checkpoint', 'text')
      .addColumn('control', 'text')
      .addColumn('control_seq', 'integer', (c) => c.notNull().defaultTo(0))
      // Every event sequence up to this one has been issued; raised in the transaction that stores the event.
      .addColumn('event_sequence', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
      .addColumn('updated_at_ms', 'bigint', (c) => c.notNull())
      .addColumn('started_at_ms', 'bigint')
      .addColumn('finished_at_ms', 'bigint')
      .execute();
    await db.schema.createIndex('ix_tasks_state').on('tasks').columns(['state', 'created_at_ms']).execute();

    await db.schema
      .createTable('task_events')
      .addColumn('task_id', 'text', (c) => c.notNull().references('tasks.id'))
      .addColumn('sequence', 'bigint', (c) => c.notNull())
      .addColumn('message_id', 'text', (c) => c.notNull().unique())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
      .addColumn('published_at_ms', 'bigint')
      .addPrimaryKeyConstraint('pk_task_events', ['task_id', 'sequence'])
      .execute();
    await db.schema
      .createIndex('ix_task_events_unpublished')
      .on('task_events')
      .column('created_at_ms')
      .where(sql.ref('published_at_ms'), 'is', null)
      .execute();

    await db.schema
      .createTable('task_consumer_positions')
      .addColumn('consumer_id', 'text', (c) => c.notNull())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('last_sequence', 'bigint', (c) => c.notNull())
      .addColumn('updated_at_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('pk_task_consumer_positions', ['consumer_id', 'session_id'])
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('task_consumer_positions').ifExists().execute();
    await db.schema.dropTable('task_events').ifExists().execute();
    await db.schema.dropTable('tasks').ifExists().execute();
  },
};
