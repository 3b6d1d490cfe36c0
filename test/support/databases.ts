import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postgresStorage, sqliteStorage, type SessionStorage } from '../../src/index.js';
import { dropPostgresSchema } from '../../storage/postgres.js';
import { FULL_TIER } from './tier.js';

/** A durable database a test can open several times (as several processes would), then drop. */
export interface DurableDatabase {
  name: string;
  open(): SessionStorage;
  drop(): Promise<void>;
}

export const POSTGRES_URL = process.env.TEST_DATABASE_URL;

if (!POSTGRES_URL) console.log('No PostgreSQL server: runtime scenarios on PostgreSQL are skipped.');

export function sqliteFile(): DurableDatabase & { file: string } {
  const dir = join(tmpdir(), `turnchart-${randomUUID()}`);
  const file = join(dir, 'sessions.db');
  return {
    name: 'sqlite',
    file,
    open: () => sqliteStorage({ filename: file }),
    drop: () => rm(dir, { recursive: true, force: true }),
  };
}

export function postgresSchema(connectionString: string): DurableDatabase {
  const schema = `tc_rt_${randomUUID().replaceAll('-', '')}`;
  return {
    name: 'postgres',
    open: () => postgresStorage({ connectionString, schema }),
    drop: () => dropPostgresSchema(connectionString, schema),
  };
}

export { dropPostgresSchema };

/**
 * The dialects every durable scenario runs on: SQLite always; its PostgreSQL twin in the full tier
 * (`npm run test:full`), when a server is configured. The quick tier still runs PostgreSQL's own
 * suites (its storage contract, connection faults, the cluster), which have no SQLite twin.
 */
export const durableTargets: { name: string; skip: boolean; create: () => DurableDatabase }[] = [
  { name: 'sqlite', skip: false, create: sqliteFile },
  ...(FULL_TIER ? [{ name: 'postgres', skip: !POSTGRES_URL, create: () => postgresSchema(POSTGRES_URL!) }] : []),
];

/** Whether the scenarios above run on PostgreSQL too in this run. */
export const POSTGRES_TWINS = FULL_TIER && Boolean(POSTGRES_URL);
