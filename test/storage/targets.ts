import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator, sql, type Kysely } from 'kysely';
import { KyselySessionStorage, withMigrationLock } from '../../storage/kysely-storage.js';
import { migrationProvider } from '../../storage/migrations/index.js';
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
  /** PostgreSQL only: the schema holding the tables and the migration bookkeeping. */
  schema?: string;
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
        return { db, storage: new KyselySessionStorage(db, { dialect: 'sqlite' }) };
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
        return { db, storage: new KyselySessionStorage(db, { dialect: 'sqlite' }) };
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
          return { db, schema, storage: new KyselySessionStorage(db, { dialect: 'postgres', schema, advisoryLock: true }) };
        },
        drop: () => dropPostgresSchema(connectionString, schema),
      };
    },
  };
}

/** Applies the migrations up to and including `name` only, as an older release of the package would have. */
export async function migrateOnlyTo(conn: Connected, name: string): Promise<void> {
  const { db, schema } = conn;
  const run = async (handle: Kysely<Database>) => {
    if (schema) await handle.schema.createSchema(schema).ifNotExists().execute();
    const migrator = new Migrator({ db: handle, provider: migrationProvider, ...(schema ? { migrationTableSchema: schema } : {}) });
    const { error } = await migrator.migrateTo(name);
    if (error) throw error instanceof Error ? error : new Error(`migration failed: ${String(error)}`);
  };
  if (!schema) return run(db);
  await withMigrationLock(db, run);
}

interface Trap {
  name: string;
  table: string;
  /** Plain SQL over `new`, valid on both dialects. */
  when: string;
  message: string;
}

/** A trigger that aborts, with `message`, any update of `table` whose new row matches `when`. */
async function installTrap(db: Kysely<Database>, dialect: Dialect, { name, table, when, message }: Trap): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`create trigger ${sql.id(name)} before update on ${sql.table(table)} when ${sql.raw(when)}
      begin select raise(abort, ${sql.lit(message)}); end`.execute(db);
    return;
  }
  await sql`create function ${sql.id(name)}() returns trigger language plpgsql as
      ${sql.lit(`begin raise exception '${message}'; end`)}`.execute(db);
  await sql`create trigger ${sql.id(name)} before update on ${sql.table(table)} for each row
      when (${sql.raw(when)}) execute function ${sql.id(name)}()`.execute(db);
}

async function removeTrap(db: Kysely<Database>, dialect: Dialect, { name, table }: Trap): Promise<void> {
  if (dialect === 'sqlite') await sql`drop trigger ${sql.id(name)}`.execute(db);
  else await sql`drop trigger ${sql.id(name)} on ${sql.table(table)}`.execute(db);
}

/** Makes the `turns` half of correctInterrupted fail, to prove the `trace_spans` half is rolled back. */
const interruptTrap: Trap = { name: 'trap_interrupt', table: 'turns', when: "new.status = 'interrupted'", message: 'trapped interrupt' };
export const installInterruptTrap = (db: Kysely<Database>, dialect: Dialect) => installTrap(db, dialect, interruptTrap);
export const removeInterruptTrap = (db: Kysely<Database>, dialect: Dialect) => removeTrap(db, dialect, interruptTrap);

/** Makes marking a checkpoint rewound fail, to prove rewindTo's un-rewind of its target is rolled back. */
const rewindTrap: Trap = { name: 'trap_rewind', table: 'compactions', when: 'new.rewound_at_ms is not null', message: 'trapped rewind' };
export const installRewindTrap = (db: Kysely<Database>, dialect: Dialect) => installTrap(db, dialect, rewindTrap);
export const removeRewindTrap = (db: Kysely<Database>, dialect: Dialect) => removeTrap(db, dialect, rewindTrap);

export async function indexNames(db: Kysely<Database>, dialect: Dialect, table: string): Promise<string[]> {
  const query =
    dialect === 'sqlite'
      ? sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = ${table}`
      : sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = ${table}`;
  const { rows } = await query.execute(db);
  return rows.map((r) => r.name);
}
