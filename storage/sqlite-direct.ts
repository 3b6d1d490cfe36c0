import type BetterSqlite3 from 'better-sqlite3';
import type { CompiledQuery, Kysely, QueryResult, SqliteDatabase } from 'kysely';
import type { Database } from './schema.js';

/**
 * The SQLite connection without Kysely's driver, for the statements every step runs. better-sqlite3
 * answers synchronously, yet Kysely's driver takes an asynchronous connection lock around every
 * statement and reaches it through several awaits; run directly, a statement is a function call
 * that answers with the same result object the driver makes.
 *
 * Only while no transaction is open on the connection. Kysely's transactions hold it across awaits,
 * and a statement run directly meanwhile would become part of that transaction (and of its
 * rollback); such a statement takes Kysely's way instead and waits for the lock like any other.
 * better-sqlite3 says whether a transaction is open (`inTransaction`), so the check is exact.
 */
export class DirectSqlite {
  constructor(
    private readonly connection: BetterSqlite3.Database,
    /** The connection's kept statements (statement-cache.ts), shared with Kysely's driver. */
    private readonly statements: SqliteDatabase,
  ) {}

  /** No transaction holds the connection: a statement may run directly now. */
  get free(): boolean {
    return !this.connection.inTransaction;
  }

  /** Runs a statement now, as Kysely's SQLite driver would, and answers with the same shape of result. */
  execute<R>(compiled: CompiledQuery<R>): QueryResult<R> {
    const statement = this.statements.prepare(compiled.sql);
    const parameters = compiled.parameters as unknown[];
    if (statement.reader) return { rows: statement.all(parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  /** Runs `work` in one transaction, all of it synchronously: committed when it returns, rolled back when it throws. */
  transaction<T>(work: () => T): T {
    return this.connection.transaction(work)();
  }
}

const direct = new WeakMap<Kysely<Database>, DirectSqlite>();

/** Marks `db` as an SQLite connection whose statements may run directly. */
export function allowDirect(db: Kysely<Database>, connection: DirectSqlite): void {
  direct.set(db, connection);
}

/**
 * The direct way to `db`'s connection when one exists and is free now; undefined otherwise (another
 * dialect, a transaction handle, or an open transaction), and the caller goes through Kysely.
 */
export function directIfFree(db: Kysely<Database>): DirectSqlite | undefined {
  const connection = direct.get(db);
  return connection?.free ? connection : undefined;
}
