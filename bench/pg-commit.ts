/**
 * `pg_commit_us`: what one durable write costs on the PostgreSQL the benchmarks use — a one-row
 * insert in its own transaction, committed with the server's settings (`synchronous_commit` as
 * configured, so the commit waits for the WAL flush), sent from Node over one connection, median of
 * 400 after 100 warm-up inserts into a table of a fresh schema (dropped after). A tool step must
 * wait for two such commits (RT-12: the assistant message before its tool runs, the result before
 * the next model call), so twice this figure is the least a PostgreSQL step can cost, whatever the
 * runtime does around it. Skipped, with the reason, when PostgreSQL does not answer.
 *
 * Back to back, each insert finds the server's backend and the WAL writer still running. A step
 * does its own work between its two writes, so the same insert is also timed after
 * `WORK_BETWEEN_US` of the main thread's CPU work (about a SQLite step): `commitAfterWorkUs`,
 * informational. On the 2-core machines here it is about half as much again as `commitUs`.
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { median } from './common.js';
import { messageOf } from '../src/protocol/error-message.js';

const DATABASE_URL = process.env.TURNCHART_BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** µs of main-thread work before each insert of the second series. */
export const WORK_BETWEEN_US = 300;

export interface PgCommitResult {
  /** Median µs of one committed one-row insert, sent back to back. */
  commitUs: number;
  /** The same after `WORK_BETWEEN_US` of CPU work on the main thread (not counted), as within a step. */
  commitAfterWorkUs: number;
  /** The server's `synchronous_commit` and `wal_sync_method`, as read. */
  synchronousCommit: string;
  walSyncMethod: string;
}

export async function measurePgCommit(inserts = 400, warmup = 100): Promise<PgCommitResult | { skipped: string }> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  try {
    await client.connect();
  } catch (error) {
    return { skipped: `no PostgreSQL at ${DATABASE_URL}: ${messageOf(error)}` };
  }
  const schema = `tc_commit_${randomUUID().replaceAll('-', '')}`;
  try {
    await client.query(`create schema ${schema}`);
    await client.query(`create table ${schema}.writes (id bigint primary key, body text not null)`);
    const insert = { name: 'tc_commit_insert', text: `insert into ${schema}.writes (id, body) values ($1, $2)` };
    let id = 0;
    const series = async (workUs: number): Promise<number> => {
      const samples: number[] = [];
      for (let i = 0; i < warmup + inserts; i++) {
        if (workUs > 0) work(workUs);
        const started = performance.now();
        await client.query({ ...insert, values: [id++, 'a message of a few dozen bytes, as a step writes'] });
        if (i >= warmup) samples.push((performance.now() - started) * 1000);
      }
      return median(samples);
    };
    const commitUs = await series(0);
    const commitAfterWorkUs = await series(WORK_BETWEEN_US);
    const setting = async (name: string) => String((await client.query<{ value: string }>(`select current_setting('${name}') as value`)).rows[0]?.value);
    return { commitUs, commitAfterWorkUs, synchronousCommit: await setting('synchronous_commit'), walSyncMethod: await setting('wal_sync_method') };
  } finally {
    await client.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

/** Keeps the main thread busy for `us` µs, as a step's own work does between its writes. */
function work(us: number): void {
  const until = performance.now() + us / 1000;
  while (performance.now() < until);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await measurePgCommit(), null, 2));
}
