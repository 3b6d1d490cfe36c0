import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterDatabase, clusterHost, clusterSkipReason, run, sequencesOf, streamOf } from '../support/cluster-hosts.js';
import { POSTGRES_URL } from '../support/databases.js';
import { call } from '../support/host.js';
import type { HostProcess } from '../support/host-process.js';
import { until } from '../support/poll.js';
import type { SseClient } from '../support/sse-client.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-cluster-kill-');

const writeNote = (path: string) => ({ text: 'writing', toolCalls: [{ name: 'write_file', args: { path, content: 'x' } }] });
const text = (words: string) => ({ clientRequestId: words, input: [{ type: 'text', text: words }] });

/** A turn's stored status, read on a connection of the test's own (no host is asked, so none takes the session). */
async function storedStatus(databaseUrl: string, turnId: string): Promise<string | undefined> {
  const schema = new URL(databaseUrl).searchParams.get('schema')!;
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ status: string }>(`select status from "${schema}".turns where id = $1`, [turnId]);
    return rows[0]?.status;
  } finally {
    await client.end();
  }
}

describe.skipIf(clusterSkipReason !== null)('a host of the cluster SIGKILLed mid-turn', { timeout: 90_000 }, () => {
  const hosts: HostProcess[] = [];
  const streams: SseClient[] = [];
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    for (const host of hosts.splice(0)) {
      host.kill('SIGKILL');
      await host.exited;
    }
    await drop?.();
    drop = undefined;
  });

  it('leaves leases that run out; the other host goes on with the turn waiting for its approval, and serves the session on, its stream resumed without a lost or repeated envelope (issue 26)', async () => {
    const db = clusterDatabase();
    drop = db.drop;
    const workspace = await tempDir();
    const common = { databaseUrl: db.url, workspace, extra: ['--lease-ttl', '2'] };
    const [a, b] = await Promise.all([
      clusterHost({ ...common, name: 'a', replies: [writeNote('one.md'), writeNote('two.md')] }),
      clusterHost({ ...common, name: 'b', replies: [{ text: 'back on b' }] }),
    ]);
    hosts.push(a, b);

    const sessionId = (await call(a.url, 'POST', '/sessions', { permissionMode: 'ask' })).body.sessionId as string;
    const unwatched = (await call(a.url, 'POST', '/sessions', { permissionMode: 'ask' })).body.sessionId as string;
    const onB = await streamOf(b.url, sessionId);
    streams.push(onB);
    const turn = await call(b.url, 'POST', `/sessions/${sessionId}/turns`, text('note one'));
    const other = await call(a.url, 'POST', `/sessions/${unwatched}/turns`, text('note two'));
    expect([turn.status, other.status]).toEqual([202, 202]);
    const turnId = turn.body.turnId as string;
    const asked = (await onB.nextUpdate('permission_requested')).update as unknown as { toolCallId: string };
    await until('the other turn to wait for its approval', async () => {
      const snapshot = await call(a.url, 'GET', `/sessions/${unwatched}`);
      return (snapshot.body.runtime as { pendingApproval?: unknown } | undefined)?.pendingApproval !== undefined;
    });
    const messagesBefore = (await call(b.url, 'GET', `/sessions/${sessionId}/messages`)).body.messages;

    a.kill('SIGKILL');
    await a.exited;

    // B's stream ends once B sees A has gone; until A's lease runs out, a command answers a typed 503 (or, later, B serves it).
    await onB.ended;
    const early = await call(b.url, 'GET', `/sessions/${sessionId}/turns/${turnId}`);
    if (early.status === 503) expect(early.body).toMatchObject({ error: { code: 'OwnerUnavailable', retryAfterMs: expect.any(Number) } });
    else expect(early).toMatchObject({ status: 200, body: { status: 'running' } });

    // Resumed on B with its last id: held until B can take the session, then told to start from a snapshot.
    const lastSeen = onB.updates.at(-1)!.sequence;
    expect(sequencesOf(onB.updates)).toEqual(run(Number(onB.events[0]!.id) + 1, onB.updates.length));
    const resumed = await streamOf(b.url, sessionId, lastSeen);
    streams.push(resumed);
    expect(resumed.status).toBe(200);
    const restart = await resumed.next(() => true);
    expect(restart.event).toBe('snapshot_required');
    const snapshot = JSON.parse(restart.data) as { lastUpdateSequence: number };
    expect(snapshot.lastUpdateSequence).toBeGreaterThan(lastSeen);

    // The turn A left goes on on B under its own id, waiting for the same approval; what A stored is all there, once.
    await until('the approval to be pending on B', async () => {
      const state = await call(b.url, 'GET', `/sessions/${sessionId}`);
      return (state.body.runtime as { pendingApproval?: { toolCallId: string } | null } | undefined)?.pendingApproval?.toolCallId === asked.toolCallId;
    });
    expect(await call(b.url, 'GET', `/sessions/${sessionId}/turns/${turnId}`)).toMatchObject({ status: 200, body: { status: 'running' } });
    expect((await call(b.url, 'GET', `/sessions/${sessionId}/messages`)).body.messages).toEqual(messagesBefore);
    // The session nobody asks for again waits for a human, not for a host: no host opens it, its turn still runs.
    expect(await storedStatus(db.url, other.body.turnId as string)).toBe('running');

    const answer = await call(b.url, 'POST', `/sessions/${sessionId}/turns/${turnId}/permissions/${asked.toolCallId}`, { decision: 'allow_once' });
    expect(answer.status).toBe(200);
    const finished = await resumed.nextUpdate('turn_finished');
    expect(finished).toMatchObject({ turnId, update: { outcome: { status: 'completed', finalText: 'back on b' } } });
    expect(sequencesOf(resumed.updates)).toEqual(run(snapshot.lastUpdateSequence + 1, resumed.updates.length));
  });
});
