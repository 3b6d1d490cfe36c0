import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';
import { FencedWriteError } from './session-storage.js';
import type { PlannedStatement } from './transaction.js';
import { KeptStatement } from './kept-statement.js';

/**
 * Fencing (one owner per session): every write of a session carries the token its owner was given,
 * and is refused once the session's token has moved on. The check sits inside the write itself —
 * one statement, no extra round trip — and on PostgreSQL it share-locks the session row, so a
 * takeover either waits for the write or the write sees the new token.
 */

/** `exists (…)`: the session `sessionId` (a value or a column) still has `token`. */
export function fenceHolds(dialect: DialectName, sessionId: RawBuilder<unknown>, token: number): RawBuilder<boolean> {
  const lock = dialect === 'postgres' ? sql` for share` : sql``;
  return sql<boolean>`exists (select 1 from sessions where sessions.id = ${sessionId} and sessions.fencing_token = ${token}${lock})`;
}

/** Inside a transaction: refuses unless the session still has `token` (and, on PostgreSQL, keeps it so until commit). */
export async function assertFence(db: Kysely<Database>, dialect: DialectName, sessionId: string, token: number | undefined): Promise<void> {
  if (token === undefined) return;
  const held = await sql<{ held: number }>`select 1 as held where ${fenceHolds(dialect, sql.val(sessionId), token)}`.execute(db);
  if (held.rows.length === 0) throw new FencedWriteError(sessionId);
}

const fenceQuery = new KeptStatement<{ sessionId: string; token: number }>(
  (db, dialect, { sessionId, token }) => sql`select 1 as held where ${fenceHolds(dialect, sql.val(sessionId), token)}`.compile(db),
  ({ sessionId, token }) => [sessionId, token],
);

/** `assertFence` as a statement of a planned transaction (transaction.ts). */
export function fenceCheck(db: Kysely<Database>, dialect: DialectName, sessionId: string, token: number): PlannedStatement {
  return {
    query: fenceQuery.compile(db, dialect, { sessionId, token }),
    check: (result) => {
      if (result.rows.length === 0) throw new FencedWriteError(sessionId);
    },
  };
}

/**
 * After a fenced statement changed nothing: was it the fence, or something else the statement
 * checks (an idempotent insert that found its row, a turn no longer running)? Throws when fenced.
 */
export async function throwIfFenced(db: Kysely<Database>, sessionId: string, token: number | undefined): Promise<void> {
  if (token === undefined) return;
  const row = await db.selectFrom('sessions').select('fencing_token').where('id', '=', sessionId).executeTakeFirst();
  if (!row || Number(row.fencing_token) !== token) throw new FencedWriteError(sessionId);
}

export type Row = Record<string, string | number | null>;

/** One row inserted only while the fence holds: `insert … select <values> where exists (…)`. */
export function fencedInsert(dialect: DialectName, table: keyof Database, row: Row, sessionId: string, token: number, onConflictDoNothing: boolean): RawBuilder<unknown> {
  const conflict = onConflictDoNothing ? sql` on conflict (id) do nothing` : sql``;
  return sql`${insertWhere(table, row, fenceHolds(dialect, sql.val(sessionId), token))}${conflict}`;
}

/**
 * `insert into <table> (…) select <values> where <condition>`: each parameter takes its column's
 * type. A value may be an expression (a position computed from other rows, say), written as it is.
 */
export function insertWhere(table: keyof Database, row: Record<string, Row[string] | RawBuilder<unknown>>, condition: RawBuilder<unknown>): RawBuilder<unknown> {
  const columns = Object.keys(row);
  const value = (v: Row[string] | RawBuilder<unknown>) => (v !== null && typeof v === 'object' ? v : sql.val(v));
  return sql`insert into ${sql.table(table)} (${sql.join(columns.map((c) => sql.ref(c)))}) select ${sql.join(
    columns.map((c) => value(row[c]!)),
  )} where ${condition}`;
}
