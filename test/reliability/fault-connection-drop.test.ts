import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresStorage, type SessionStorage, type StoredMessage } from '../../src/index.js';
import { dropPostgresSchema, POSTGRES_URL } from '../support/databases.js';
import { until } from '../support/poll.js';
import { lockTable, terminateBackends, waitingOnLock } from '../support/postgres-admin.js';
import { tally } from '../support/reliability-tally.js';
import { withHook, writesMessage, type BeforeCall } from '../support/storage-hook.js';
import { expectNextTurnWorks, expectNothingLost, expectStoredAs, expectTypedEnd, faultTurn, startFaultTurn, type FaultTurn } from './fault-turn.js';

/**
 * Issue 9, item 3: the database connections of a runtime on PostgreSQL are ended from the server
 * side (`pg_terminate_backend`, found by the runtime's `applicationName`) in the middle of a turn, at
 * three moments. Each time the turn ends typed, nothing stored before is lost, and the next turn works.
 */

interface Case {
  schema: string;
  applicationName: string;
  /** Connection errors the runtime's pool reported. */
  errors: string[];
  /** The messages stored when the fault struck, read on a connection of the test's own. */
  before: StoredMessage[];
  reader: SessionStorage;
}

const cases: Case[] = [];
afterEach(async () => {
  for (const c of cases.splice(0)) {
    await c.reader.close();
    await dropPostgresSchema(POSTGRES_URL!, c.schema);
  }
});

function newCase(): Case {
  const schema = `tc_drop_${randomUUID().replaceAll('-', '')}`;
  const c = { schema, applicationName: `turnchart-drop-${randomUUID().slice(0, 8)}`, errors: [], before: [], reader: postgresStorage({ connectionString: POSTGRES_URL!, schema }) };
  cases.push(c);
  return c;
}

/** A runtime whose storage runs `before` ahead of each call, its connections named for this case. */
async function runtimeFor(c: Case, before: BeforeCall = () => undefined): Promise<{ turn: FaultTurn; storage: SessionStorage }> {
  const storage = withHook(
    postgresStorage({ connectionString: POSTGRES_URL!, schema: c.schema, applicationName: c.applicationName, onConnectionError: (e) => c.errors.push(e.message) }),
    before,
  );
  return { turn: await faultTurn(storage), storage };
}

/** Ends the runtime's connections, after noting what was stored. */
async function dropConnections(c: Case, sessionId: string): Promise<number> {
  c.before = await c.reader.listMessages(sessionId);
  const killed = await terminateBackends(POSTGRES_URL!, c.applicationName);
  expect(killed).toBeGreaterThan(0);
  return killed;
}

/** Runs the fault turn to its end, then the checks every case shares. */
async function finish(c: Case, turn: FaultTurn, storage: SessionStorage, turnId: string, allowed: readonly ('completed' | 'persistence_error')[]) {
  try {
    const outcome = await turn.session.waitForTurn(turnId);
    console.log(`connections dropped mid-turn: the turn ended ${JSON.stringify(outcome)}`);
    expectTypedEnd(outcome, allowed);
    expectNothingLost(c.before, await c.reader.listMessages(turn.session.id));
    await expectNextTurnWorks(turn, storage);
    await expectStoredAs(c.reader, turnId, outcome);
    expectNothingLost(c.before, await c.reader.listMessages(turn.session.id));
    tally('fault cases: connections dropped (postgres)');
  } finally {
    await turn.runtime.shutdown();
  }
}

describe.skipIf(!POSTGRES_URL)('PostgreSQL connections dropped mid-turn (pg_terminate_backend)', () => {
  it('while the model streams: once the pool has seen its connections go, the turn completes on new ones', async () => {
    const c = newCase();
    const { turn, storage } = await runtimeFor(c);
    const turnId = await startFaultTurn(turn);
    await turn.reached;
    const killed = await dropConnections(c, turn.session.id);
    // Each ended connection reports its end once: the server's notice when it sat idle in the pool (which
    // then discards it), the broken socket when it was in use. After that the pool holds none of them.
    await until('the pool to see every ended connection', () => c.errors.filter((m) => /administrator command|terminated unexpectedly/.test(m)).length >= killed);
    turn.release();
    await finish(c, turn, storage, turnId, ['completed']);
  });

  it('just before the assistant message is written, before the pool can notice: the turn ends typed', async () => {
    const c = newCase();
    const holder: { sessionId?: string } = {};
    let struck = false;
    const { turn, storage } = await runtimeFor(c, async (method, args) => {
      if (struck || !writesMessage(method, args, 'assistant')) return;
      struck = true;
      await dropConnections(c, holder.sessionId!);
    });
    holder.sessionId = turn.session.id;
    const turnId = await startFaultTurn(turn);
    turn.release();
    await finish(c, turn, storage, turnId, ['completed', 'persistence_error']);
    expect(struck).toBe(true);
  });

  it('while the tool result is being written (its statement waits on a lock): the turn fails persistence_error', async () => {
    const c = newCase();
    const holder: { sessionId?: string; struck?: Promise<void> } = {};
    const { turn, storage } = await runtimeFor(c, async (method, args) => {
      if (holder.struck || !writesMessage(method, args, 'tool')) return;
      c.before = await c.reader.listMessages(holder.sessionId!);
      const lock = await lockTable(POSTGRES_URL!, c.schema, 'messages');
      // The write goes ahead and blocks on the lock; its connection is ended while it waits.
      holder.struck = (async () => {
        try {
          await until('the tool result write to wait on the lock', async () => (await waitingOnLock(POSTGRES_URL!, c.applicationName)) > 0);
          expect(await terminateBackends(POSTGRES_URL!, c.applicationName)).toBeGreaterThan(0);
        } finally {
          await lock.release();
        }
      })();
    });
    holder.sessionId = turn.session.id;
    const turnId = await startFaultTurn(turn);
    turn.release();
    await finish(c, turn, storage, turnId, ['persistence_error']);
    await holder.struck;
    expect(turn.toolRuns()).toBe(1);
  });
});
