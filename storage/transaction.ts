import type { Kysely, Transaction } from 'kysely';
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
