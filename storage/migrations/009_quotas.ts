import { sql, type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * Issue 25: per-principal quotas, counted on the database so that they survive a restart and are
 * the same on every host of a cluster.
 *
 * - Open sessions: the principal's sessions some host holds a live lease on, read through a partial
 *   index of the held sessions (`owner_id` is set on acquire and cleared on release, never by a lease
 *   renewal, so renewals stay cheap).
 * - Turns: each turn row names its session's principal (written with the row), so the principal's
 *   running and queued turns (a partial index: only those) and the turns it started in the last
 *   minute (by `started_at_ms`) are counted without reading its other sessions' turns. Turns running
 *   or queued when this migration runs get their session's principal.
 * - Tokens per UTC day: one row per principal and day, upserted as model calls finish.
 * - Streams: one row per open stream of a principal, held by the host serving it (`owner_id`) until
 *   `expires_at_ms` (the database's clock), which that host renews; a crashed host's rows stop
 *   counting once they expire.
 * - `sessions.quota_exempt`: the session was created by an admin (or is a sub-agent of one): its
 *   turns draw on no principal's daily token budget.
 */
export const quotas: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('sessions').addColumn('quota_exempt', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.createIndex('ix_sessions_principal_held').on('sessions').column('principal').where(sql.ref('owner_id'), 'is not', null).execute();

    await db.schema.alterTable('turns').addColumn('principal', 'text').execute();
    await sql`update turns set principal = (select principal from sessions where sessions.id = turns.session_id) where status in ('running', 'queued')`.execute(db);
    await db.schema
      .createIndex('ix_turns_principal_active')
      .on('turns')
      // `status` too: with both columns constrained the planner prefers it to the window's index without statistics (SQLite).
      .columns(['principal', 'status'])
      .where(sql<boolean>`status in ('running', 'queued')`)
      .execute();
    await db.schema.createIndex('ix_turns_principal_started').on('turns').columns(['principal', 'started_at_ms']).execute();

    await db.schema
      .createTable('principal_usage')
      .addColumn('principal', 'text', (c) => c.notNull())
      .addColumn('day', 'text', (c) => c.notNull())
      .addColumn('tokens', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('pk_principal_usage', ['principal', 'day'])
      .execute();

    await db.schema
      .createTable('stream_slots')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('principal', 'text', (c) => c.notNull())
      .addColumn('owner_id', 'text', (c) => c.notNull())
      .addColumn('expires_at_ms', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('ix_stream_slots_principal').on('stream_slots').columns(['principal', 'expires_at_ms']).execute();
    await db.schema.createIndex('ix_stream_slots_owner').on('stream_slots').column('owner_id').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('stream_slots').ifExists().execute();
    await db.schema.dropTable('principal_usage').ifExists().execute();
    await db.schema.dropIndex('ix_turns_principal_started').ifExists().execute();
    await db.schema.dropIndex('ix_turns_principal_active').ifExists().execute();
    await db.schema.alterTable('turns').dropColumn('principal').execute();
    await db.schema.dropIndex('ix_sessions_principal_held').ifExists().execute();
    await db.schema.alterTable('sessions').dropColumn('quota_exempt').execute();
  },
};
