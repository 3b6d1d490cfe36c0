import pg from 'pg';

/**
 * What a test does to a PostgreSQL server from the outside, on its own short-lived connection: end a
 * host's connections (found by the `applicationName` its storage was given), and hold a table lock.
 */

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'turnchart-test-admin' });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** `pg_terminate_backend` on every connection named `applicationName`; resolves with how many there were. */
export function terminateBackends(url: string, applicationName: string): Promise<number> {
  return withClient(url, async (client) => {
    const result = await client.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [applicationName]);
    return result.rowCount ?? 0;
  });
}

/** How many connections named `applicationName` are waiting on a lock right now. */
export function waitingOnLock(url: string, applicationName: string): Promise<number> {
  return withClient(url, async (client) => {
    const result = await client.query("select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'", [applicationName]);
    return (result.rows[0] as { n: number }).n;
  });
}

/**
 * An `access exclusive` lock on `schema.table`, held in an open transaction until `release()` (which
 * is quiet when a server restart has ended the transaction and the connection already).
 */
export async function lockTable(url: string, schema: string, table: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url, application_name: 'turnchart-test-admin' });
  // Ended by a restart while idle, the client reports it as an 'error' event: not a failure of the test.
  client.on('error', () => undefined);
  await client.connect();
  await client.query('begin');
  await client.query(`lock table "${schema}"."${table}" in access exclusive mode`);
  return {
    release: async () => {
      await client.query('rollback').catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}
