import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { KyselySessionStorage } from './kysely-storage.js';
import { KyselyTaskStorage } from './kysely-task-storage.js';
import type { TaskStorage } from './task-storage.js';
import type { Database } from './schema.js';
import type { SessionStorage } from './session-storage.js';

export interface PostgresOptions {
  connectionString: string;
  /** Isolates the tables (and the migration bookkeeping) in this schema, created by migrate(). */
  schema?: string;
  /** Told about connection errors the pool absorbed (a terminated backend, a server restart); default: ignored. */
  onConnectionError?: (error: Error) => void;
  /** Shown in `pg_stat_activity` (default `turnchart`). */
  applicationName?: string;
}

/**
 * A connection string may name the schema as `?schema=NAME` (handy on a command line); it is taken
 * out here, since PostgreSQL itself has no such parameter.
 */
export function splitSchema(connectionString: string): { connectionString: string; schema?: string } {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    return { connectionString };
  }
  const schema = url.searchParams.get('schema');
  if (schema === null) return { connectionString };
  url.searchParams.delete('schema');
  return { connectionString: url.toString(), schema };
}

// The name goes into a libpq startup option unquoted, where PostgreSQL would fold case;
// restricting it to lower-case identifiers keeps it identical to the quoted name Kysely creates.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The configured Kysely handle; exported so tests can reach the same pool with raw SQL. */
export function postgresDatabase(options: PostgresOptions): Kysely<Database> {
  const split = splitSchema(options.connectionString);
  const connectionString = split.connectionString;
  const schema = options.schema ?? split.schema;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw new Error(`invalid PostgreSQL schema name: ${schema}`);
  // Set at connection startup so every pooled connection sees the same schema, with no per-checkout query.
  const pool = new pg.Pool({
    connectionString,
    application_name: options.applicationName ?? 'turnchart',
    // A server that does not answer is a failed call, not a request held forever.
    connectionTimeoutMillis: 10_000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  // A connection the server drops (pg_terminate_backend, a restart, an idle timeout) emits 'error' on
  // its client — and, while it sits idle in the pool, on the pool too. An 'error' nobody listens to
  // ends the process, and a client checked out for a transaction has no listener of its own: every
  // client gets one here. The pool discards a broken client when it comes back; the next query opens a new one.
  pool.on('connect', (client) => client.on('error', (error) => options.onConnectionError?.(error)));
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** Tasks on the same PostgreSQL database and schema as the sessions (a pool of their own). */
export function postgresTaskStorage(options: PostgresOptions): TaskStorage {
  const schema = options.schema ?? splitSchema(options.connectionString).schema;
  return new KyselyTaskStorage(postgresDatabase(options), { dialect: 'postgres', advisoryLock: true, ...(schema ? { schema } : {}) });
}

export function postgresStorage(options: PostgresOptions): SessionStorage {
  const schema = options.schema ?? splitSchema(options.connectionString).schema;
  return new KyselySessionStorage(postgresDatabase(options), {
    dialect: 'postgres',
    advisoryLock: true,
    ...(schema ? { schema } : {}),
  });
}
