import { afterEach, describe, expect, it } from 'vitest';
import { clusterDatabase, clusterHost, clusterSkipReason, run, sequencesOf, streamOf } from '../support/cluster-hosts.js';
import { call } from '../support/host.js';
import type { HostProcess } from '../support/host-process.js';
import { until } from '../support/poll.js';
import type { SseClient } from '../support/sse-client.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-cluster-');

const writeNote = (path: string) => ({ text: 'writing', toolCalls: [{ name: 'write_file', args: { path, content: 'the build is green' } }] });
const text = (words: string) => ({ clientRequestId: words, input: [{ type: 'text', text: words }] });

async function finishedOn(url: string, sessionId: string, turnId: string) {
  for (;;) {
    const state = await call(url, 'GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`);
    if (state.status !== 200 || (state.body.status !== 'running' && state.body.status !== 'queued')) return state;
  }
}

/** The approval a turn waits for, read on `url` once it is pending. */
async function pendingApproval(url: string, sessionId: string): Promise<string> {
  let toolCallId: string | undefined;
  await until('a pending approval', async () => {
    const snapshot = await call(url, 'GET', `/sessions/${sessionId}`);
    toolCallId = (snapshot.body.runtime as { pendingApproval?: { toolCallId: string } } | undefined)?.pendingApproval?.toolCallId;
    return toolCallId !== undefined;
  });
  return toolCallId!;
}

describe.skipIf(clusterSkipReason !== null)('a cluster of two host processes on one PostgreSQL and one RabbitMQ', { timeout: 90_000 }, () => {
  const hosts: HostProcess[] = [];
  const streams: SseClient[] = [];
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    for (const host of hosts.splice(0)) {
      host.kill('SIGTERM');
      await host.exited;
    }
    await drop?.();
    drop = undefined;
  });

  it('serves one session alternately from both hosts: commands routed to its owner, answered as if local, its events in order on either', async () => {
    const db = clusterDatabase();
    drop = db.drop;
    const workspace = await tempDir();
    const common = { databaseUrl: db.url, workspace };
    const [a, b] = await Promise.all([
      clusterHost({ ...common, name: 'a', replies: [writeNote('one.md'), { text: 'wrote one.md' }, writeNote('two.md')] }),
      clusterHost({ ...common, name: 'b', replies: [] }),
    ]);
    hosts.push(a, b);

    const created = await call(a.url, 'POST', '/sessions', { permissionMode: 'ask' });
    expect(created.status).toBe(201);
    const sessionId = created.body.sessionId as string;
    const onA = await streamOf(a.url, sessionId);
    const onB = await streamOf(b.url, sessionId);
    streams.push(onA, onB);
    expect([onA.status, onB.status]).toEqual([200, 200]);

    // Started on A, approved on B: B routes the approval to A, which holds the session.
    const first = await call(a.url, 'POST', `/sessions/${sessionId}/turns`, text('note one'));
    expect(first).toMatchObject({ status: 202, body: { status: 'running' } });
    const firstTurn = first.body.turnId as string;
    const firstCall = await pendingApproval(b.url, sessionId);
    expect(await call(b.url, 'POST', `/sessions/${sessionId}/turns/${firstTurn}/permissions/${firstCall}`, { decision: 'allow_once' })).toEqual({
      status: 200,
      body: { ok: true },
    });
    expect(await finishedOn(b.url, sessionId, firstTurn)).toMatchObject({ status: 200, body: { status: 'completed', outcome: { finalText: 'wrote one.md' } } });
    await Promise.all([onA.nextUpdate('turn_finished'), onB.nextUpdate('turn_finished')]);

    // Started on B, cancelled on B, read on A: the turn ran on A all along.
    const second = await call(b.url, 'POST', `/sessions/${sessionId}/turns`, text('note two'));
    expect(second).toMatchObject({ status: 202, body: { status: 'running' } });
    const secondTurn = second.body.turnId as string;
    await pendingApproval(a.url, sessionId);

    // Every answer B routes is the one A gives locally: values, typed errors, status codes.
    const same: [string, string, unknown?][] = [
      ['GET', `/sessions/${sessionId}`],
      ['GET', `/sessions/${sessionId}/turns/${firstTurn}`],
      ['GET', `/sessions/${sessionId}/turns/turn_unknown`],
      ['GET', `/sessions/ses_unknown`],
      ['POST', `/sessions/${sessionId}/turns`, text('note one')],
      ['POST', `/sessions/${sessionId}/turns`, text('while busy')],
      ['POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'blank', input: [{ type: 'text', text: '   ' }] }],
      ['POST', `/sessions/${sessionId}/turns/${firstTurn}/cancel`],
      ['POST', `/sessions/${sessionId}/turns/${firstTurn}/permissions/${firstCall}`, { decision: 'deny' }],
      ['POST', `/sessions/${sessionId}/turns/${secondTurn}/permissions/call_unknown`, { decision: 'deny' }],
      ['POST', `/sessions/${sessionId}/compact`],
      ['POST', `/sessions/${sessionId}/rewind`, { compactionId: 'cmp_unknown' }],
      ['GET', `/sessions/${sessionId}/messages`],
    ];
    const statuses: number[] = [];
    for (const [method, route, body] of same) {
      const local = await call(a.url, method, route, body);
      expect({ route, ...(await call(b.url, method, route, body)) }).toEqual({ route, ...local });
      statuses.push(local.status);
    }
    expect(statuses).toEqual([200, 200, 404, 404, 202, 409, 400, 409, 409, 409, 409, 409, 200]);

    expect(await call(b.url, 'POST', `/sessions/${sessionId}/turns/${secondTurn}/cancel`)).toEqual({ status: 200, body: { ok: true } });
    expect(await finishedOn(a.url, sessionId, secondTurn)).toMatchObject({ status: 200, body: { status: 'cancelled' } });
    await Promise.all([onA.nextUpdate('turn_finished', 0, 2), onB.nextUpdate('turn_finished', 0, 2)]);

    // B's stream is A's, envelope for envelope, from the same start; neither skips nor repeats a number.
    expect(onB.events[0]!.event).toBe('snapshot');
    const startB = Number(onB.events[0]!.id);
    const fromA = onA.updates.filter((u) => u.sequence > startB);
    expect(onB.updates).toEqual(fromA);
    expect(sequencesOf(onB.updates)).toEqual(run(startB + 1, onB.updates.length));
    expect(onB.updates.map((u) => u.update.type)).toContain('permission_resolved');

    // A client of A that resumes on B with its last id gets exactly what it missed, from A's replay.
    const resumeAt = onA.updates.find((u) => u.update.type === 'permission_requested')!.sequence;
    const resumed = await streamOf(b.url, sessionId, resumeAt);
    streams.push(resumed);
    await resumed.nextUpdate('turn_finished', resumeAt, 2);
    expect(resumed.events.filter((e) => e.event !== 'message')).toEqual([]);
    expect(resumed.updates).toEqual(onA.updates.filter((u) => u.sequence > resumeAt));

    // One that resumed from a range A no longer has is told so, as on A itself.
    const tooOld = await streamOf(b.url, sessionId, 0);
    streams.push(tooOld);
    const first2 = await tooOld.next(() => true);
    const local = await streamOf(a.url, sessionId, 0);
    streams.push(local);
    expect(first2.event).toBe((await local.next(() => true)).event);
  });

  it('ends a stream on the other host when its owner shuts down; resumed there, the session moves on and the stream continues without a gap', async () => {
    const db = clusterDatabase();
    drop = db.drop;
    const workspace = await tempDir();
    const common = { databaseUrl: db.url, workspace };
    const [a, b] = await Promise.all([
      clusterHost({ ...common, name: 'a', replies: [{ text: 'first on a' }] }),
      clusterHost({ ...common, name: 'b', replies: [{ text: 'then on b' }] }),
    ]);
    hosts.push(a, b);
    const sessionId = (await call(a.url, 'POST', '/sessions', {})).body.sessionId as string;
    const onB = await streamOf(b.url, sessionId);
    streams.push(onB);
    const turn = await call(b.url, 'POST', `/sessions/${sessionId}/turns`, text('hello'));
    expect(await finishedOn(b.url, sessionId, turn.body.turnId as string)).toMatchObject({ body: { outcome: { finalText: 'first on a' } } });
    await onB.nextUpdate('turn_finished');

    // A shuts down: it closes the session, says so, and B's stream ends.
    a.kill('SIGTERM');
    await a.exited;
    await onB.ended;
    const lastSeen = onB.updates.at(-1)!.sequence;
    const resumed = await streamOf(b.url, sessionId, lastSeen);
    streams.push(resumed);
    // A released the session with its exact last number, so B, which takes it now, numbers on from there.
    const next = await call(b.url, 'POST', `/sessions/${sessionId}/turns`, text('still there?'));
    expect(await finishedOn(b.url, sessionId, next.body.turnId as string)).toMatchObject({ body: { outcome: { finalText: 'then on b' } } });
    await resumed.nextUpdate('turn_finished');
    expect(resumed.events.filter((e) => e.event !== 'message')).toEqual([]);
    expect(sequencesOf(resumed.updates)).toEqual(run(lastSeen + 1, resumed.updates.length));
  });
});
