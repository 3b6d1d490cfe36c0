import { type Kysely, type Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
/**
 * GR-2a: the guardrails' loop and mistake trackers belong to the session and outlive its turns
 * (seed 003). Each turn's terminal write stores them, as JSON, in the turn's own row — the statement
 * that ends a turn runs anyway, so keeping them costs no extra write — and a session opening takes
 * them from its last turn that has them. Turns corrected as interrupted never wrote theirs.
 */
export const guardrailTrackers: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('turns').addColumn('guardrail_trackers', 'text').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('turns').dropColumn('guardrail_trackers').execute();
  },
};
