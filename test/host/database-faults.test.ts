import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../src/host/host.js';
import { postgresStorage, scriptedModel } from '../../src/index.js';
import { dropPostgresSchema, POSTGRES_URL } from '../support/databases.js';
import { call, gatedStep } from '../support/host.js';
import { tcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-dbfault-');

/**
 * How a connection ended by `pg_terminate_backend` first reaches the client: the server's notice, or,
 * when the server closed without one (it sends none while it is reading a statement), the socket's end
 * or, with a statement of the client's left unread, its reset. Which one depends on where the backend
 * is when the signal lands: all three are the same fault.
 */
const CONNECTION_ENDED = /^(terminating connection due to administrator command|Connection terminated unexpectedly|read ECONNRESET)$/;

/** A host on its own schema of the shared server, reached through `connectionString`, with the name its connections show. */
async function hostOn(connectionString: string, schema: string, applicationName: string, steps: Parameters<typeof scriptedModel>[0]) {
  let noteLost: (message: string) => void = () => undefined;
  /** The first connection the storage reports lost: how it ended. */
  const connectionLost = new Promise<string>((resolve) => (noteLost = resolve));
  const storage = postgresStorage({ connectionString, schema, applicationName, onConnectionError: (e) => noteLost(e.message) });
  const host = await startHost({ host: '127.0.0.1', port: 0, workspace: await tempDir(), idleTtlSeconds: 300, storage, model: scriptedModel(steps), warn: () => undefined });
  const api = (method: string, path: string, body?: unknown) => call(host.url, method, path, body);
  return { host, api, connectionLost };
}

type Api = (m: string, p: string) => Promise<{ status: number; body: Record<string, unknown> }>;

async function storedMessages(api: Api, sessionId: string): Promise<{ id: string }[]> {
  const page = await api('GET', `/sessions/${sessionId}/messages`);
  expect(page.status).toBe(200);
  return page.body.messages as { id: string }[];
}

/** What was stored before the fault is still there, in order, exactly once. */
function expectNothingLost(before: { id: string }[], after: { id: string }[]): void {
  expect(after.slice(0, before.length)).toEqual(before);
  expect(new Set(after.map((m) => m.id)).size).toBe(after.length);
}

async function turnEnd(api: Api, sessionId: string, turnId: string) {
  for (;;) {
    const state = await api('GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`);
    if (state.status === 200 && state.body.status !== 'running' && state.body.status !== 'queued') return state.body;
  }
}

describe.skipIf(!POSTGRES_URL)('a PostgreSQL connection that goes away never takes the host down', () => {
  const hosts: RunningHost[] = [];
  const proxies: TcpProxy[] = [];
  const schemas: string[] = [];
  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.close().catch(() => undefined);
    for (const p of proxies.splice(0)) await p.close();
    for (const s of schemas.splice(0)) await dropPostgresSchema(POSTGRES_URL!, s);
  });

  it('survives pg_terminate_backend of every connection mid-turn; the turn recovers or fails typed, and the next turn works', async () => {
    const schema = `tc_fault_${randomUUID().replaceAll('-', '')}`;
    const applicationName = `turnchart-${randomUUID().slice(0, 8)}`;
    schemas.push(schema);
    const gate = gatedStep({ text: 'after the connections were killed' });
    const { host, api, connectionLost } = await hostOn(POSTGRES_URL!, schema, applicationName, [gate.step, { text: 'next turn' }]);
    hosts.push(host);
    const sessionId = (await api('POST', '/sessions', {})).body.sessionId as string;
    const turn = await api('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'go' }] });
    await gate.reached;
    // The user message and the world state, written before the model call.
    const before = await storedMessages(api, sessionId);

    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    const killed = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [applicationName]);
    await admin.end();
    expect(killed.rowCount).toBeGreaterThan(0);

    gate.release();
    const ended = await turnEnd(api, sessionId, turn.body.turnId as string);
    // The writes after the kill race with the pool noticing the ended connections: on new connections they
    // succeed; a write that got an ended one fails the turn typed, leading with how that connection ended.
    if (ended.status !== 'completed') {
      expect(ended.outcome).toMatchObject({ status: 'failed', code: 'persistence_error', message: expect.stringMatching(CONNECTION_ENDED) });
    }
    expectNothingLost(before, await storedMessages(api, sessionId));
    expect((await api('GET', '/healthz')).status).toBe(200);
    const next = await api('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r2', input: [{ type: 'text', text: 'again' }] });
    expect(next.status).toBe(202);
    expect(await turnEnd(api, sessionId, next.body.turnId as string)).toMatchObject({ status: 'completed', outcome: { finalText: 'next turn' } });
    expectNothingLost(before, await storedMessages(api, sessionId));
    // The storage told the host of a connection it lost, leading with its first cause.
    expect(await connectionLost).toMatch(CONNECTION_ENDED);
  });

  it('reports 503 while the database is unreachable, fails the turn it interrupts typed, and works again once it is back', async () => {
    const schema = `tc_fault_${randomUUID().replaceAll('-', '')}`;
    schemas.push(schema);
    const target = new URL(POSTGRES_URL!);
    const proxy = await tcpProxy(target.hostname, Number(target.port || 5432));
    proxies.push(proxy);
    const viaProxy = new URL(POSTGRES_URL!);
    viaProxy.port = String(proxy.port);
    const gate = gatedStep({ text: 'lost', toolCalls: [{ name: 'list_dir', args: {} }] });
    const { host, api } = await hostOn(viaProxy.toString(), schema, 'turnchart-proxy', [gate.step, { text: 'back again' }]);
    hosts.push(host);
    const sessionId = (await api('POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
    const turn = await api('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'go' }] });
    await gate.reached;

    await proxy.cut();
    gate.release();
    expect(await turnEnd(api, sessionId, turn.body.turnId as string)).toMatchObject({ status: 'failed', outcome: { code: 'persistence_error' } });
    expect(await api('GET', '/healthz')).toMatchObject({ status: 503, body: { ok: false, error: { code: 'StorageUnavailable' } } });
    expect(await api('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r2', input: [{ type: 'text', text: 'x' }] })).toMatchObject({
      status: 503,
      body: { error: { code: 'PersistenceError' } },
    });
    expect(await api('GET', '/sessions')).toMatchObject({ status: 503, body: { error: { code: 'StorageUnavailable' } } });

    await proxy.restore();
    expect(await api('GET', '/healthz')).toMatchObject({ status: 200, body: { ok: true } });
    const next = await api('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r3', input: [{ type: 'text', text: 'again' }] });
    expect(next.status).toBe(202);
    expect(await turnEnd(api, sessionId, next.body.turnId as string)).toMatchObject({ status: 'completed', outcome: { finalText: 'back again' } });
    // The interrupted turn's closing write was retried before the next turn began: nothing is left running.
    const rows = await api('GET', `/sessions/${sessionId}/turns/${turn.body.turnId as string}`);
    expect(rows.body).toMatchObject({ status: 'failed' });
  });
});
