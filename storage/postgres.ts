import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { KyselySessionStorage } from './kysely-storage.js';
import type { Database } from './schema.js';
import type { SessionStorage } from './session-storage.js';

export interface PostgresOptions {
  connectionString: string;
  /** Isolates the tables (and the migration bookkeeping) in this schema, created by migrate(). */
  schema?: string;
  /** Told about connection errors the pool absorbed (a terminated backend, a server restart); default: ignored. */
  onConnectionError?: (error: Error) => void;
}

// The name goes into a libpq startup option unquoted, where PostgreSQL would fold case;
// restricting it to lower-case identifiers keeps it identical to the quoted name Kysely creates.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The configured Kysely handle; exported so tests can reach the same pool with raw SQL. */
export function postgresDatabase(options: PostgresOptions): Kysely<Database> {
  const { connectionString, schema } = options;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw new Error(`invalid PostgreSQL schema name: ${schema}`);
  // Set at connection startup so every pooled connection sees the same schema, with no per-checkout query.
  const pool = new pg.Pool({ connectionString, ...(schema ? { options: `-c search_path=${schema}` } : {}) });
  // An idle pooled connection that the server drops (pg_terminate_backend, a restart, an idle timeout)
  // is reported as an 'error' event on the pool; unheard, Node turns it into a crash of the host.
  // The pool has already discarded that connection, and the next query opens a new one.
  pool.on('error', (error) => options.onConnectionError?.(error));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

export function postgresStorage(options: PostgresOptions): SessionStorage {
  return new KyselySessionStorage(postgresDatabase(options), {
    dialect: 'postgres',
    advisoryLock: true,
    ...(options.schema ? { schema: options.schema } : {}),
  });
}
