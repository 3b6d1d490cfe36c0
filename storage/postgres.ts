import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { KyselySessionStorage, MIGRATION_LOCK_KEY } from './kysely-storage.js';
import { KyselyTaskStorage } from './kysely-task-storage.js';
import { PreparingClient } from './prepared-statements.js';
import type { TaskStorage } from './task-storage.js';
import type { Database } from './schema.js';
import type { SessionStorage } from './session-storage.js';

export interface PostgresOptions {
  connectionString: string;
  /** Isolates the tables (and the migration bookkeeping) in this schema, created by migrate(). */
  schema?: string;
  /**
   * Told, once per connection, when the pool loses one (a terminated backend, a server restart), with
   * the first cause: the server's notice when it sent one, else the socket's end or reset. Default: ignored.
   */
  onConnectionError?: (error: Error) => void;
  /** Shown in `pg_stat_activity` (default `turnchart`). */
  applicationName?: string;
  /**
   * Keep the per-step statements prepared on each connection (default true). Turn it off behind a
   * pooler that does not carry prepared statements across server connections (PgBouncer in transaction
   * mode before 1.21).
   */
  prepareStatements?: boolean;
  /**
   * Concurrent sessions' message writes that arrive within one event-loop turn go out as one
   * statement and one commit (default true); each caller still waits for its own row to be durable.
   */
  groupCommit?: boolean;
}

/**
 * A connection string may name the schema as `?schema=NAME` (handy on a command line); it is taken
 * out here, since PostgreSQL itself has no such parameter.
 */
function splitSchema(connectionString: string): { connectionString: string; schema?: string } {
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
    // Idle connections (the lease renewals keep one in use now and then) are no reason to keep the
    // process alive: an embedding program that ends without shutdown() still exits.
    allowExitOnIdle: true,
    ...(options.prepareStatements === false ? {} : { Client: PreparingClient }),
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  pool.on('connect', (client) => watchConnection(client, options.onConnectionError));
  // The pool re-emits the 'error' of a client idle in it; the client's own listener has reported it.
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/**
 * Reports the loss of one pooled connection once, leading with its first cause, and keeps the pool
 * from handing it out again.
 *
 * A connection the server drops (pg_terminate_backend, a restart, an idle timeout) emits 'error' on
 * its client. An 'error' nobody listens to ends the process, and a client checked out for a
 * transaction has no listener of its own: every client gets one here.
 *
 * A terminated backend sends a FATAL notice, then closes its socket — with a reset when a statement
 * the client sent meanwhile was left unread. With no statement running, pg raises the notice as the
 * client's 'error' and the pool discards the client. With one running, the notice is only that
 * statement's error; the client's own 'error' comes later from the socket (ECONNRESET, or 'Connection
 * terminated unexpectedly'), or never, when the client was released and ended first — and until the
 * socket's close is read, the pool would hand the released client out again. So the notice is taken
 * from the protocol stream as it arrives: it is reported whoever holds the connection, and the client
 * is ended at once, which the pool sees on release. A server that closes without a notice is reported
 * with the socket's error, as before.
 */
function watchConnection(client: pg.PoolClient, report: ((error: Error) => void) | undefined): void {
  let reported = false;
  const lost = (error: Error) => {
    if (reported) return;
    reported = true;
    report?.(error);
  };
  client.on('error', lost);
  // pg's own listener ran first: a running statement has its error already; nothing else is sent on this connection.
  client.connection.on('errorMessage', (message: pg.DatabaseError) => {
    if (!endsSession(message)) return;
    lost(message);
    void client.end().catch(() => undefined);
  });
}

/** A FATAL or PANIC error ends the server's session; class 57P (operator intervention) also when the severity is translated. */
function endsSession(message: pg.DatabaseError): boolean {
  return message.severity === 'FATAL' || message.severity === 'PANIC' || (message.code?.startsWith('57P') ?? false);
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
    ...(options.groupCommit === false ? { groupCommit: false } : {}),
  });
}

/**
 * Drops a schema with a short-lived client, under the migration lock: a drop running beside another
 * process's migration breaks that migration's introspection of the server's schemas.
 */
export async function dropPostgresSchema(connectionString: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}
