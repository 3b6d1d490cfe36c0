import type { Kysely, Migration } from 'kysely';

// Frozen like 001: untyped Kysely, so later changes to `Database` never alter what this migration does.
export const compactions: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('compactions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
      .addColumn('position', 'integer', (c) => c.notNull())
      // No foreign key on the boundary: a checkpoint names a message, it does not own it.
      .addColumn('boundary_message_id', 'text', (c) => c.notNull())
      .addColumn('boundary_sequence', 'integer', (c) => c.notNull())
      .addColumn('summary', 'text', (c) => c.notNull())
      .addColumn('replay_text', 'text')
      .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
      .addColumn('rewound_at_ms', 'bigint')
      .addUniqueConstraint('uq_compactions_session_position', ['session_id', 'position'])
      .execute();
    await db.schema.createIndex('ix_compactions_session').on('compactions').column('session_id').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('compactions').ifExists().execute();
  },
};
