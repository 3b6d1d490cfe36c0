import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { KyselySessionStorage } from '../../storage/kysely-storage.js';
import { postgresDatabase } from '../../storage/postgres.js';
import type { Database } from '../../storage/schema.js';
import type { SessionStorage } from '../../storage/session-storage.js';
import { sqliteDatabase } from '../../storage/sqlite.js';
import { dropPostgresSchema } from '../support/databases.js';

export type Dialect = 'sqlite' | 'postgres';

/** A storage plus the Kysely handle on the same connection, for the raw SQL the interface has no verb for. */
export interface Connected {
  storage: SessionStorage;
  db: Kysely<Database>;
}

/** One empty database: connect to it (possibly again, after closing) and finally remove it. */
export interface Location {
  connect(): Connected;
  drop(): Promise<void>;
}

export interface ContractTarget {
  dialect: Dialect;
  /** Whether a second connect() sees what the first one wrote. */
  durable: boolean;
  create(): Promise<Location>;
}

export const sqliteMemoryTarget: ContractTarget = {
  dialect: 'sqlite',
  durable: false,
  async create() {
    return {
      connect() {
        const db = sqliteDatabase({ filename: ':memory:' });
        return { db, storage: new KyselySessionStorage(db) };
      },
      async drop() {},
    };
  },
};

export const sqliteFileTarget: ContractTarget = {
  dialect: 'sqlite',
  durable: true,
  async create() {
    const dir = join(tmpdir(), `turnchart-storage-${randomUUID()}`);
    // The nested directory does not exist yet: every test also covers parent-directory creation.
    const filename = join(dir, 'nested', 'sessions.sqlite');
    return {
      connect() {
        const db = sqliteDatabase({ filename });
        return { db, storage: new KyselySessionStorage(db) };
      },
      drop: () => rm(dir, { recursive: true, force: true }),
    };
  },
};

export function postgresTarget(connectionString: string): ContractTarget {
  return {
    dialect: 'postgres',
    durable: true,
    async create() {
      const schema = `tc_test_${randomUUID().replaceAll('-', '')}`;
      return {
        connect() {
          const db = postgresDatabase({ connectionString, schema });
          return { db, storage: new KyselySessionStorage(db, { schema }) };
        },
        drop: () => dropPostgresSchema(connectionString, schema),
      };
    },
  };
}

/** Makes the `turns` half of correctInterrupted fail, to prove the `trace_spans` half is rolled back. */
export async function installInterruptTrap(db: Kysely<Database>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`create trigger trap_interrupt before update on turns when new.status = 'interrupted'
      begin select raise(abort, 'trapped interrupt'); end`.execute(db);
    return;
  }
  await sql`create function trap_interrupt() returns trigger language plpgsql as
      $$ begin raise exception 'trapped interrupt'; end $$`.execute(db);
  await sql`create trigger trap_interrupt before update on turns for each row
      when (new.status = 'interrupted') execute function trap_interrupt()`.execute(db);
}

export async function removeInterruptTrap(db: Kysely<Database>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') await sql`drop trigger trap_interrupt`.execute(db);
  else await sql`drop trigger trap_interrupt on turns`.execute(db);
}

export async function indexNames(db: Kysely<Database>, dialect: Dialect, table: string): Promise<string[]> {
  const query =
    dialect === 'sqlite'
      ? sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = ${table}`
      : sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = ${table}`;
  const { rows } = await query.execute(db);
  return rows.map((r) => r.name);
}
