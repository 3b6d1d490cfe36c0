import pg from 'pg';
import { messageOf } from '../../src/protocol/error-message.js';

/** The server `npm test` uses when TEST_DATABASE_URL is not set: this machine's PostgreSQL, database `test`. */
export const LOCAL_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Vitest global setup: points the PostgreSQL suites at the local server when one answers, so
 * `npm test` runs them without any configuration, and says which way it went.
 */
export default async function setup(): Promise<void> {
  if (process.env.TEST_DATABASE_URL) {
    console.log(`PostgreSQL suites: on TEST_DATABASE_URL (${redact(process.env.TEST_DATABASE_URL)})`);
    return;
  }
  const client = new pg.Client({ connectionString: LOCAL_POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('select 1');
    process.env.TEST_DATABASE_URL = LOCAL_POSTGRES_URL;
    console.log(`PostgreSQL suites: a server answers on ${LOCAL_POSTGRES_URL}; running them there`);
  } catch (error) {
    console.log(`PostgreSQL suites: skipped — no server answers on ${LOCAL_POSTGRES_URL} (${messageOf(error)}); set TEST_DATABASE_URL to use another`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}
