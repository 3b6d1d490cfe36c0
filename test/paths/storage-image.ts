import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { KyselySessionStorage } from '../../storage/kysely-storage.js';
import type { Database } from '../../storage/schema.js';
import type { SessionStorage } from '../../src/index.js';

/**
 * SQLite `:memory:` storage for one path, opened from an image of a database already migrated.
 * Running the migrations costs more than most paths (about 15 ms each, thousands of paths); the
 * image holds the very tables they create, and the runtime still runs `migrate()` (finding nothing
 * to do). The connection is set up as `sqliteStorage` sets up an in-memory one.
 */
let image: Promise<Buffer> | null = null;

function connect(from: Buffer | ':memory:'): { raw: BetterSqlite3.Database; storage: SessionStorage } {
  const raw = new BetterSqlite3(from);
  raw.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }) });
  return { raw, storage: new KyselySessionStorage(db, { dialect: 'sqlite' }) };
}

async function migratedImage(): Promise<Buffer> {
  const { raw, storage } = connect(':memory:');
  await storage.migrate();
  const bytes = raw.serialize();
  await storage.close();
  return bytes;
}

export async function migratedMemoryStorage(): Promise<SessionStorage> {
  image ??= migratedImage();
  return connect(await image).storage;
}
