import { type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * Sub-agents: a child session names the parent session, turn and tool call that started it, in
 * its own row — written by the same insert that creates it, so a child never exists unlinked (and
 * a linked session is non-interactive from its first turn). The index answers "the children of".
 */
const COLUMNS = ['parent_session_id', 'parent_turn_id', 'parent_tool_call_id'] as const;

export const subagents: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    for (const name of COLUMNS) await db.schema.alterTable('sessions').addColumn(name, 'text').execute();
    // Non-interactive approval: what would ask is denied. Every child has it; a host may set it on any session.
    await db.schema.alterTable('sessions').addColumn('non_interactive', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.createIndex('ix_sessions_parent').on('sessions').columns(['parent_session_id', 'created_at_ms']).execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex('ix_sessions_parent').ifExists().execute();
    await db.schema.alterTable('sessions').dropColumn('non_interactive').execute();
    for (const name of [...COLUMNS].reverse()) await db.schema.alterTable('sessions').dropColumn(name).execute();
  },
};
