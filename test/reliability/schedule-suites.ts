import { relative, resolve } from 'node:path';
import { afterAll, beforeAll, it } from 'vitest';
import { migratedMemoryStorage } from '../paths/storage-image.js';
import { POSTGRES_URL, postgresSchema, type DurableDatabase } from '../support/databases.js';
import { checkSchedules } from './schedule-runs.js';

/**
 * The schedules of issue 9, item 2 — 10 000 on SQLite, 1 000 on PostgreSQL — in shards, one test
 * file each, so vitest's workers share them out; shard k draws with the run's seed + k − 1.
 */

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * SQLite: each schedule on a fresh runtime over its own `:memory:` database, opened from an image
 * of a migrated one (migrating costs more than most schedules; the runtime still runs `migrate()`,
 * which finds nothing to do).
 */
export function sqliteScheduleShard(shard: number, shards: number, numRuns: number, file: string): void {
  it(`${numRuns} random command schedules keep every invariant on SQLite (shard ${shard} of ${shards})`, async () => {
    await checkSchedules({ dialect: 'sqlite', shard, shards, numRuns, file: relative(ROOT, file), open: migratedMemoryStorage });
  }, 1_800_000);
}

/**
 * PostgreSQL: each schedule on a fresh runtime with a fresh session, in one schema migrated once
 * for the shard. A schema per schedule costs about 0.5 s of DDL (create, migrate, drop under the
 * migration lock), more than the schedule itself; every check is about the schedule's own session,
 * and the sessions before it are closed and released.
 */
export function postgresScheduleShard(shard: number, shards: number, numRuns: number, file: string): void {
  let db: DurableDatabase | undefined;
  beforeAll(async () => {
    if (!POSTGRES_URL) return;
    db = postgresSchema(POSTGRES_URL);
    const storage = db.open();
    await storage.migrate();
    await storage.close();
  });
  afterAll(() => db?.drop());
  if (!POSTGRES_URL) console.log('schedules on postgres: skipped — no PostgreSQL server (TEST_DATABASE_URL unset)');
  it.skipIf(!POSTGRES_URL)(`${numRuns} random command schedules keep every invariant on PostgreSQL (shard ${shard} of ${shards})`, async () => {
    await checkSchedules({ dialect: 'postgres', shard, shards, numRuns, file: relative(ROOT, file), open: async () => db!.open() });
  }, 1_800_000);
}
