import { sql, type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * What serving sessions to other processes needs (RL-1…RL-3): runs with their trigger, queued turns
 * and their input, a busy policy per session, an owner with a lease and a fencing token, the update
 * sequence reserved so far, and clientRequestId de-duplication the database enforces.
 */
export const service: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const sessionColumns: [string, 'text' | 'bigint' | 'integer', string | number | null][] = [
      ['busy_policy', 'text', 'reject'],
      // Every update sequence up to this one may have been issued: a new owner starts above it.
      ['update_sequence', 'bigint', 0],
      ['owner_id', 'text', null],
      ['owner_host', 'text', null],
      ['owner_pid', 'integer', null],
      ['lease_expires_at_ms', 'bigint', null],
      // Raised whenever the session changes hands; every write of the session carries the one it holds.
      ['fencing_token', 'bigint', 0],
    ];
    for (const [name, type, fallback] of sessionColumns) {
      await db.schema
        .alterTable('sessions')
        .addColumn(name, type, (c) => (fallback === null ? c : c.notNull().defaultTo(fallback)))
        .execute();
    }
    await db.schema.createIndex('ix_sessions_created').on('sessions').columns(['created_at_ms', 'id']).execute();

    // A queued turn keeps its input here until it starts; then the input becomes messages.
    await db.schema.alterTable('turns').addColumn('input', 'text').execute();
    await db.schema.alterTable('turns').addColumn('queue_position', 'integer').execute();
    await db.schema.dropIndex('ix_turns_session_request').execute();
    await db.schema
      .createIndex('uq_turns_session_request')
      .on('turns')
      .columns(['session_id', 'client_request_id'])
      .unique()
      .execute();
    await db.schema
      .createIndex('ix_turns_queued')
      .on('turns')
      .columns(['session_id', 'queue_position'])
      .where(sql.ref('status'), '=', 'queued')
      .execute();

    await db.schema
      .createTable('runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
      .addColumn('turn_id', 'text', (c) => c.notNull().unique().references('turns.id'))
      .addColumn('trigger_type', 'text', (c) => c.notNull())
      .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('ix_runs_session').on('runs').column('session_id').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('runs').ifExists().execute();
    await db.schema.dropIndex('ix_turns_queued').ifExists().execute();
    await db.schema.dropIndex('uq_turns_session_request').ifExists().execute();
    await db.schema.createIndex('ix_turns_session_request').on('turns').columns(['session_id', 'client_request_id']).execute();
    for (const column of ['queue_position', 'input']) await db.schema.alterTable('turns').dropColumn(column).execute();
    await db.schema.dropIndex('ix_sessions_created').ifExists().execute();
    for (const column of ['fencing_token', 'lease_expires_at_ms', 'owner_pid', 'owner_host', 'owner_id', 'update_sequence', 'busy_policy']) {
      await db.schema.alterTable('sessions').dropColumn(column).execute();
    }
  },
};
