import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresStorage, type SessionStorage, type StoredMessage } from '../../src/index.js';
import { until } from '../support/poll.js';
import { lockTable, waitingOnLock } from '../support/postgres-admin.js';
import { privatePostgres, privatePostgresUnavailable, type PrivatePostgres } from '../support/private-postgres.js';
import { tally } from '../support/reliability-tally.js';
import { withHook, writesMessage, type BeforeCall } from '../support/storage-hook.js';
import { expectNextTurnWorks, expectNothingLost, expectStoredAs, expectTypedEnd, faultTurn, startFaultTurn, type FaultTurn } from './fault-turn.js';

/**
 * Issue 9, item 3: the PostgreSQL server restarts in the middle of a turn — a private server
 * (`private-postgres.ts`), so the shared one other suites use stays up. The turn ends typed (it
 * completes on new connections, or fails `persistence_error`), nothing stored before is lost, and
 * the next turn works.
 */

const unavailable = await privatePostgresUnavailable();
if (unavailable) console.log(`PostgreSQL restart cases: skipped — ${unavailable}`);

let server: PrivatePostgres | undefined;
let n = 0;
beforeAll(async () => {
  if (!unavailable) server = await privatePostgres();
}, 120_000);
afterAll(() => server?.destroy());

const APPLICATION = 'turnchart-restart';

/** Reads the schema on a connection of its own (the runtime's may be broken). */
async function reading<T>(schema: string, read: (storage: SessionStorage) => Promise<T>): Promise<T> {
  const reader = postgresStorage({ connectionString: server!.url, schema });
  try {
    return await read(reader);
  } finally {
    await reader.close();
  }
}

const storedNow = (schema: string, sessionId: string): Promise<StoredMessage[]> => reading(schema, (s) => s.listMessages(sessionId));

async function runtimeOnServer(before: BeforeCall = () => undefined): Promise<{ turn: FaultTurn; storage: SessionStorage; schema: string }> {
  const schema = `tc_restart_${++n}`;
  const storage = withHook(postgresStorage({ connectionString: server!.url, schema, applicationName: APPLICATION }), before);
  return { turn: await faultTurn(storage), storage, schema };
}

interface Struck {
  turn: FaultTurn;
  storage: SessionStorage;
  schema: string;
  turnId: string;
  /** What was stored when the fault struck. */
  before: StoredMessage[];
}

/** The turn ended as `allowed`; then the checks every case shares. */
async function expectRecovered({ turn, storage, schema, turnId, before }: Struck, allowed: readonly ('completed' | 'persistence_error')[]) {
  try {
    const outcome = await turn.session.waitForTurn(turnId);
    console.log(`PostgreSQL restart mid-turn: the turn ended ${JSON.stringify(outcome)}`);
    expectTypedEnd(outcome, allowed);
    await expectNextTurnWorks(turn, storage);
    await reading(schema, (s) => expectStoredAs(s, turnId, outcome));
    expectNothingLost(before, await storedNow(schema, turn.session.id));
    tally('fault cases: server restarted (postgres)');
  } finally {
    await turn.runtime.shutdown();
  }
}

describe.skipIf(unavailable !== null)('a PostgreSQL restart mid-turn (a private server)', () => {
  it('restarted (pg_ctl restart -m fast) while the model streams: the turn ends typed', async () => {
    const { turn, storage, schema } = await runtimeOnServer();
    const turnId = await startFaultTurn(turn);
    await turn.reached;
    const before = await storedNow(schema, turn.session.id);
    expect(before.length).toBeGreaterThan(0);
    await server!.restart();
    turn.release();
    await expectRecovered({ turn, storage, schema, turnId, before }, ['completed', 'persistence_error']);
  });

  it('down while the turn writes, back before the next turn: the turn fails persistence_error, then all is well', async () => {
    const { turn, storage, schema } = await runtimeOnServer();
    const turnId = await startFaultTurn(turn);
    await turn.reached;
    const before = await storedNow(schema, turn.session.id);
    await server!.stop();
    turn.release();
    // Its closing write fails too, while the server is down; it is made before the next turn begins.
    await turn.session.waitForTurn(turnId);
    await server!.start();
    await expectRecovered({ turn, storage, schema, turnId, before }, ['persistence_error']);
  });

  it('restarted while the tool result is being written (its statement waits on a lock): the turn fails persistence_error', async () => {
    const holder: { schema?: string; sessionId?: string; before?: StoredMessage[]; struck?: Promise<void> } = {};
    const { turn, storage, schema } = await runtimeOnServer(async (method, args) => {
      if (holder.struck || !writesMessage(method, args, 'tool')) return;
      holder.before = await storedNow(holder.schema!, holder.sessionId!);
      const lock = await lockTable(server!.url, holder.schema!, 'messages');
      // The write goes ahead and blocks on the lock; the server restarts while it waits.
      holder.struck = (async () => {
        try {
          await until('the tool result write to wait on the lock', async () => (await waitingOnLock(server!.url, APPLICATION)) > 0);
          await server!.restart();
        } finally {
          await lock.release();
        }
      })();
    });
    Object.assign(holder, { schema, sessionId: turn.session.id });
    const turnId = await startFaultTurn(turn);
    turn.release();
    await turn.session.waitForTurn(turnId);
    await holder.struck;
    await expectRecovered({ turn, storage, schema, turnId, before: holder.before! }, ['persistence_error']);
    expect(turn.toolRuns()).toBe(1);
  });
});
