import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterDatabase, clusterHost, clusterSkipReason, run, sequencesOf, streamOf } from '../support/cluster-hosts.js';
import { POSTGRES_URL } from '../support/databases.js';
import { call } from '../support/host.js';
import { until } from '../support/poll.js';
import type { HostProcess } from '../support/host-process.js';
import type { SseClient } from '../support/sse-client.js';
import { fold, texts, UiChatClient, userMessage } from '../support/ui-chat-client.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-cluster-resume-');

/** Whether the turn's approval request is stored, read on a connection of the test's own (no host is asked). */
async function approvalStored(databaseUrl: string, turnId: string): Promise<boolean> {
  const schema = new URL(databaseUrl).searchParams.get('schema')!;
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const { rows } = await client.query(`select 1 from "${schema}".approvals where turn_id = $1 and decision is null`, [turnId]);
    return rows.length > 0;
  } finally {
    await client.end();
  }
}

/**
 * Issue 26 across hosts: the owner of a session is SIGKILLed while its turn waits for an approval;
 * a client of its event stream comes back on the other host with its last id. That host holds the
 * request until the dead owner's lease runs out, takes the session — the turn going on there under
 * its own id (`owner_lost`) — and streams `snapshot_required`, then the whole continuation.
 */
describe.skipIf(clusterSkipReason !== null)('an event stream resumed on another host after its owner was SIGKILLed mid-turn', { timeout: 90_000 }, () => {
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

  it('gets snapshot_required with the turn running, then turn_resumed and the rest of the same turn, nothing twice', async () => {
    const db = clusterDatabase();
    drop = db.drop;
    const workspace = await tempDir();
    const common = { databaseUrl: db.url, workspace, extra: ['--lease-ttl', '2'] };
    const [a, b] = await Promise.all([
      clusterHost({ ...common, name: 'a', replies: [{ text: 'Writing the note.', toolCalls: [{ name: 'write_file', args: { path: 'note.md', content: 'x' } }] }] }),
      clusterHost({ ...common, name: 'b', replies: [{ text: 'Written, on b.' }] }),
    ]);
    hosts.push(a, b);

    const sessionId = (await call(a.url, 'POST', '/sessions', { permissionMode: 'ask' })).body.sessionId as string;
    const before = await streamOf(a.url, sessionId);
    streams.push(before);
    const turn = await call(a.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'write the note' }] });
    const turnId = turn.body.turnId as string;
    await before.nextUpdate('permission_requested');
    // Killed once the request is durable: the turn then waits for the same approval on B (before, B would give the call its interrupted result).
    await until('the approval request to be stored', () => approvalStored(db.url, turnId));
    const lastSeen = before.updates.at(-1)!.sequence;

    a.kill('SIGKILL');
    await a.exited;
    hosts.splice(hosts.indexOf(a), 1);
    await before.ended;

    // Held until A's lease runs out and B has taken the session; the turn then waits for the same approval on B.
    const after = await streamOf(b.url, sessionId, lastSeen);
    streams.push(after);
    expect(after.status).toBe(200);
    const restart = await after.next(() => true);
    expect(restart.event).toBe('snapshot_required');
    const snapshot = JSON.parse(restart.data) as { lastUpdateSequence: number; runtime: { kind: string; turnId?: string } };
    expect(snapshot.lastUpdateSequence).toBeGreaterThan(lastSeen);
    expect(snapshot.runtime).toMatchObject({ kind: 'running', turnId });
    const asked = await after.nextUpdate('permission_requested');
    expect(after.updates.find((u) => u.update.type === 'turn_resumed')).toMatchObject({ turnId, update: { clientRequestId: 'r1', reason: 'owner_lost' } });

    const toolCallId = asked.update.toolCallId as string;
    expect(await call(b.url, 'POST', `/sessions/${sessionId}/turns/${turnId}/permissions/${toolCallId}`, { decision: 'allow_once' })).toMatchObject({ status: 200 });
    const finished = await after.nextUpdate('turn_finished');
    expect(finished).toMatchObject({ turnId, update: { outcome: { status: 'completed', finalText: 'Written, on b.' } } });

    expect(after.updates.every((u) => u.turnId === turnId)).toBe(true);
    expect(sequencesOf(after.updates)).toEqual(run(snapshot.lastUpdateSequence + 1, after.updates.length));
    const seen = new Set(sequencesOf(before.updates));
    expect(after.updates.filter((u) => seen.has(u.sequence))).toEqual([]);
  });
  it('a useChat resume on the other host waits out the dead owner and replays the same turn, up to the approval it waits for again', async () => {
    const db = clusterDatabase();
    drop = db.drop;
    const workspace = await tempDir();
    const common = { databaseUrl: db.url, workspace, extra: ['--lease-ttl', '2'] };
    const [a, b] = await Promise.all([
      clusterHost({ ...common, name: 'a', replies: [{ text: 'Writing the note.', toolCalls: [{ name: 'write_file', args: { path: 'note.md', content: 'x' } }] }] }),
      clusterHost({ ...common, name: 'b', replies: [] }),
    ]);
    hosts.push(a, b);
    const chatId = 'chat-owner-lost';
    const first = await fold(await new UiChatClient(a.url, chatId).send([userMessage('u1', 'write the note')]));
    expect(first.types).toContain('tool-approval-request');
    const turnId = first.message.id;
    await until('the approval request to be stored', () => approvalStored(db.url, turnId));

    a.kill('SIGKILL');
    await a.exited;
    hosts.splice(hosts.indexOf(a), 1);

    // Not 503 while A's lease runs, nor 204 once it has run out and nobody holds the chat: the turn goes on on B.
    const resumed = await new UiChatClient(b.url, chatId).reconnect();
    expect(resumed).not.toBeNull();
    const { message, types, errors } = await fold(resumed!);
    expect(errors).toEqual([]);
    expect(message.id).toBe(turnId);
    expect(texts(message)).toEqual(['Writing the note.']);
    expect(types.filter((t) => t === 'tool-approval-request')).toHaveLength(1);
    expect(types.at(-1)).toBe('finish');
  });
});
