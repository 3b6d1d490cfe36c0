import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { KyselySessionStorage } from './kysely-storage.js';
import type { Database } from './schema.js';
import type { SessionStorage } from './session-storage.js';

export interface SqliteOptions {
  /** A file path, or ':memory:' for a database that lives as long as the storage. */
  filename: string;
}

/** The configured Kysely handle; exported so tests can reach the same connection with raw SQL. */
export function sqliteDatabase(options: SqliteOptions): Kysely<Database> {
  const inMemory = options.filename === ':memory:' || options.filename === '';
  if (!inMemory) mkdirSync(dirname(options.filename), { recursive: true });
  const sqlite = new BetterSqlite3(options.filename);
  // WAL lets readers proceed during a write and survives a crash mid-transaction; meaningless in memory.
  if (!inMemory) sqlite.pragma('journal_mode = WAL');
  // SQLite ships with foreign keys off, per connection.
  sqlite.pragma('foreign_keys = ON');
  // Another process (a CLI inspecting the file) may hold the lock briefly; wait instead of failing with SQLITE_BUSY.
  sqlite.pragma('busy_timeout = 5000');
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
}

export function sqliteStorage(options: SqliteOptions): SessionStorage {
  return new KyselySessionStorage(sqliteDatabase(options), { dialect: 'sqlite' });
}
