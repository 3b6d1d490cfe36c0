import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { retryMethodsWhenBusy, retryWhenBusy } from './busy-retry.js';
import { cachingStatements } from './statement-cache.js';
import { allowDirect, DirectSqlite } from './sqlite-direct.js';
import { KyselyTaskStorage } from './kysely-task-storage.js';
import { TASK_STORAGE_METHODS, type TaskStorage } from './task-storage.js';
import { KyselySessionStorage } from './kysely-storage.js';
import type { Database } from './schema.js';
import type { SessionStorage } from './session-storage.js';

export interface SqliteOptions {
  /** A file path, or ':memory:' for a database that lives as long as the storage. */
  filename: string;
  /** How long a call waits (asynchronously) for another process's lock before failing; default 5 000 ms. */
  busyBudgetMs?: number;
}

/** The longest SQLite's own busy handler may block the event loop. */
const SYNCHRONOUS_BUSY_WAIT_MS = 10;

/** The configured Kysely handle; exported so tests can reach the same connection with raw SQL. */
export function sqliteDatabase(options: SqliteOptions): Kysely<Database> {
  const inMemory = options.filename === ':memory:' || options.filename === '';
  if (!inMemory) mkdirSync(dirname(options.filename), { recursive: true });
  const sqlite = new BetterSqlite3(options.filename);
  // WAL lets readers proceed during a write and survives a crash mid-transaction; meaningless in memory.
  if (!inMemory) sqlite.pragma('journal_mode = WAL');
  // SQLite ships with foreign keys off, per connection.
  sqlite.pragma('foreign_keys = ON');
  // Another process may hold the lock. SQLite waits for it synchronously, stalling every session of this
  // process, so only briefly here; longer waits are asynchronous retries (busy-retry.ts).
  sqlite.pragma(`busy_timeout = ${SYNCHRONOUS_BUSY_WAIT_MS}`);
  const statements = cachingStatements(sqlite);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: statements }) });
  allowDirect(db, new DirectSqlite(sqlite, statements));
  return db;
}

/** Tasks in the same SQLite file (their own connection; WAL lets both write in turn). */
export function sqliteTaskStorage(options: SqliteOptions): TaskStorage {
  const storage = new KyselyTaskStorage(sqliteDatabase(options), { dialect: 'sqlite' });
  return retryMethodsWhenBusy(storage, TASK_STORAGE_METHODS, { budgetMs: options.busyBudgetMs ?? 5_000 });
}

export function sqliteStorage(options: SqliteOptions): SessionStorage {
  const storage = new KyselySessionStorage(sqliteDatabase(options), { dialect: 'sqlite' });
  return retryWhenBusy(storage, { budgetMs: options.busyBudgetMs ?? 5_000 });
}
