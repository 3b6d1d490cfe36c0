import type { Kysely, Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * Issue 27: the W3C `traceparent` of each turn's parent, written with the turn's row (as it is
 * queued, or as it begins). A turn that moves hosts (issue 26) is resumed with it, so both parts of
 * the turn are spans of one trace. The caller's context when it sent one; otherwise a synthetic root
 * made at acceptance. Null for turns stored before this migration.
 */
export const turnTraceContext: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('turns').addColumn('trace_parent', 'text').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('turns').dropColumn('trace_parent').execute();
  },
};
