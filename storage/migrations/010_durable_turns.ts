import { sql, type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * Issue 26: turns that survive their host.
 *
 * - `sessions.resume_turns`: a turn of this session that was running when its host went away goes on
 *   under its own id when the session is next opened, instead of being corrected to `interrupted`.
 *   Written when the session is created (the runtime's choice); 0 for sessions stored before, and for
 *   task sessions, whose worker resumes them its own way.
 * - `turns.cancel_requested_at_ms`: a cancel the owner accepted for a running turn; a turn left
 *   running with one is ended `cancelled` by the next opening, not resumed.
 * - `approvals`: every approval a tool call asked for, with its answer once there is one. A turn
 *   waiting for a human is reopened waiting for the same call, and an answer given while no host
 *   held the session is found there; `started_at_ms` says an allowed call began to run (so a
 *   resumed turn knows whether it may have). The partial index holds only the unanswered ones: the sweep
 *   asks which sessions wait for nobody but a human.
 */
export const durableTurns: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('sessions').addColumn('resume_turns', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('turns').addColumn('cancel_requested_at_ms', 'bigint').execute();
    await db.schema
      .createTable('approvals')
      .addColumn('turn_id', 'text', (c) => c.notNull())
      .addColumn('tool_call_id', 'text', (c) => c.notNull())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addColumn('tool_name', 'text', (c) => c.notNull())
      .addColumn('paths', 'text', (c) => c.notNull())
      .addColumn('requested_at_ms', 'bigint', (c) => c.notNull())
      .addColumn('expires_at_ms', 'bigint')
      .addColumn('decision', 'text')
      .addColumn('answered_by', 'text')
      .addColumn('answered_at_ms', 'bigint')
      .addColumn('started_at_ms', 'bigint')
      .addPrimaryKeyConstraint('pk_approvals', ['turn_id', 'tool_call_id'])
      .execute();
    await db.schema.createIndex('ix_approvals_session').on('approvals').column('session_id').execute();
    await db.schema.createIndex('ix_approvals_unanswered').on('approvals').columns(['session_id', 'expires_at_ms']).where(sql.ref('decision'), 'is', null).execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('approvals').ifExists().execute();
    await db.schema.alterTable('turns').dropColumn('cancel_requested_at_ms').execute();
    await db.schema.alterTable('sessions').dropColumn('resume_turns').execute();
  },
};
