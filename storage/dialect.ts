import { sql, type RawBuilder } from 'kysely';

/** The two databases the one storage implementation speaks to. */
export type DialectName = 'sqlite' | 'postgres';

/**
 * The database's clock in epoch milliseconds. Leases are compared against it rather than against
 * each process's own clock, so hosts whose clocks disagree still agree on who holds a session.
 */
export function databaseNowMs(dialect: DialectName): RawBuilder<number> {
  return dialect === 'postgres'
    ? sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`
    : sql<number>`cast(unixepoch('subsec') * 1000 as integer)`;
}
