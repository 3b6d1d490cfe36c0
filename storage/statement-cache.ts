import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * The SQLite connection as Kysely's driver sees it, with prepared statements kept for reuse.
 * Kysely's driver prepares every statement it runs anew, and preparing was the largest single cost
 * of a persisted step on SQLite (about an eighth of it, in a CPU profile of the peers workload); the
 * runtime runs the same few statements over and over. The cache is bounded (least recently used
 * goes first), since multi-row inserts give every row count a statement of its own.
 *
 * A statement is reused only after its last run has finished, which holds because every statement
 * here runs to completion synchronously; Kysely's streaming queries (`iterate`) are not used.
 */
export function cachingStatements(db: BetterSqlite3.Database, capacity = 256): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close() {
      cache.clear();
      db.close();
    },
    prepare(sql: string): SqliteStatement {
      const kept = cache.get(sql);
      if (kept) {
        // Re-inserting keeps the Map's order the order of last use.
        cache.delete(sql);
        cache.set(sql, kept);
        return kept;
      }
      const statement = db.prepare(sql) as unknown as SqliteStatement;
      cache.set(sql, statement);
      if (cache.size > capacity) cache.delete(cache.keys().next().value!);
      return statement;
    },
  };
}
