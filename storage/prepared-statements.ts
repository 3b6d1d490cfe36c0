import type { CompiledQuery, Kysely, QueryResult } from 'kysely';
import pg from 'pg';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';
import { directIfFree } from './sqlite-direct.js';

/**
 * Named server-side prepared statements for the few statements every step runs on PostgreSQL (the
 * fenced message inserts, the turn's begin and end). Kysely sends each statement unnamed, so the
 * server parses and plans it anew every time; named, each pooled connection parses it once and then
 * only binds and executes. On this project's test machine that took a message insert from about
 * 400 to 320 µs (pgbench, `-M simple` against `-M prepared`), and a step makes two of them.
 *
 * Only texts registered here are named, and there are a bounded number of them, because each name
 * holds a statement on every connection of the pool until the connection closes.
 */
const names = new Map<string, string>();
const MAX_NAMED = 64;

/** Marks an SQL text as run often enough to keep prepared; later registrations beyond the bound are ignored. */
function keepPrepared(sql: string): void {
  if (names.has(sql) || names.size >= MAX_NAMED) return;
  names.set(sql, `turnchart_${names.size}`);
}

type QueryArguments = Parameters<pg.Client['query']>;

/** A pool client that runs the registered texts as named statements, and everything else as before. */
export class PreparingClient extends pg.Client {
  override query(...args: unknown[]): never {
    const [text, values] = args;
    const name = typeof text === 'string' && Array.isArray(values) && args.length === 2 ? names.get(text) : undefined;
    const forwarded = name === undefined ? args : [{ name, text, values }];
    return super.query(...(forwarded as QueryArguments)) as never;
  }
}

/**
 * Runs a compiled statement the way that costs least for the statements every turn runs: kept
 * prepared on PostgreSQL, on the connection directly on SQLite when no transaction holds it.
 */
export function executeKept<R>(db: Kysely<Database>, dialect: DialectName, compiled: CompiledQuery<R>): Promise<QueryResult<R>> {
  if (dialect === 'postgres') keepPrepared(compiled.sql);
  else {
    const direct = directIfFree(db);
    if (direct) {
      try {
        return Promise.resolve(direct.execute(compiled));
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }
  return db.executeQuery(compiled);
}
