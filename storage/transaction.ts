import type { CompiledQuery, Kysely, QueryResult, Transaction } from 'kysely';
import { directIfFree } from './sqlite-direct.js';
import type { Database } from './schema.js';

/**
 * A transaction that reports the error that made it fail. When a statement or the commit fails in a
 * way that makes SQLite end the transaction itself (a full disk, a read-only file), the rollback
 * that follows fails too — "cannot rollback - no transaction is active" — and with Kysely's
 * `transaction().execute()` that second error was all a caller saw. Here the rollback's own failure
 * is dropped and the first cause is thrown.
 */
export async function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const trx = await db.startTransaction().execute();
  try {
    const result = await work(trx);
    await trx.commit().execute();
    return result;
  } catch (error) {
    await trx.rollback().execute().catch(() => undefined);
    throw error;
  }
}

/** A statement of a planned transaction, and what must hold of its result for the transaction to go on. */
export interface PlannedStatement {
  query: CompiledQuery<unknown>;
  /** Throws when the result says the write must not happen (a stale fence, a turn no longer queued). */
  check?: (result: QueryResult<unknown>) => void;
}

/**
 * Runs compiled statements in order as one transaction, each result checked before the next runs;
 * a single statement is atomic by itself and runs without one. On an SQLite connection no
 * transaction holds, all of it runs at once, synchronously (sqlite-direct.ts): in process, a
 * transaction's awaits are its only cost beyond the statements.
 */
export async function runInTransaction(db: Kysely<Database>, statements: readonly PlannedStatement[]): Promise<void> {
  const direct = directIfFree(db);
  if (statements.length <= 1) {
    const [only] = statements;
    if (!only) return;
    const result = direct ? direct.execute(only.query) : await db.executeQuery(only.query);
    only.check?.(result);
    return;
  }
  if (direct) {
    direct.transaction(() => {
      for (const { query, check } of statements) {
        const result = direct.execute(query);
        check?.(result);
      }
    });
    return;
  }
  await inTransaction(db, async (trx) => {
    for (const { query, check } of statements) {
      const result = await trx.executeQuery(query);
      check?.(result);
    }
  });
}
