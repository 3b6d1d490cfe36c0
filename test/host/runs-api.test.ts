import { SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/index.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, gatedStep, newSession, testHost, type TestHost } from '../support/host.js';
import { SseClient, type SseEvent } from '../support/sse-client.js';
import { until } from '../support/poll.js';

/**
 * Issue 30, items 1 and 2: the seed's entry point (`POST /sessions/{id}/messages`), the run resource
 * (`GET /sessions/{id}/runs`, `GET /runs/{runId}`) and the run's events in the seed's names
 * (`GET /runs/{runId}/events`), through the HTTP API with a scripted model.
 */

const SECRET = 'runs-api-test-secret-0123456789abcdef';
const bearer = async (sub: string) => ({
  authorization: `Bearer ${await new SignJWT({ sub }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))}`,
});

const message = (clientRequestId: string, text = 'go') => ({ clientRequestId, input: [{ type: 'text', text }] });

/** A read tool that runs until released; `reached` resolves when it starts. */
function heldTool(name: string) {
  let release: () => void = () => undefined;
  let markReached: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => (markReached = resolve));
  const tool = defineTool({
    name,
    description: 'waits until the test lets it finish',
    effect: 'read',
    input: z.object({}),
    execute: async () => {
      markReached();
      await gate;
      return { status: 'succeeded', content: 'held and done' };
    },
  });
  return { tool, reached, release: () => release() };
}

/** The events' names, a run of `message.delta` (the scripted model streams its text in pieces) as one. */
const names = (events: SseEvent[]) => events.map((e) => e.event).filter((name, i, all) => name !== 'message.delta' || all[i - 1] !== name);
const data = (event: SseEvent) => JSON.parse(event.data) as Record<string, unknown>;

describe.each(durableTargets)('runs over HTTP on $name (issue 30)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });

  it.skipIf(skip)('POST /messages is POST /turns: 202 once stored, the same answer, one turn per clientRequestId across both paths', async () => {
    db = create();
    const gate = gatedStep({ text: 'answered' });
    host = await testHost(db, [gate.step]);
    const sessionId = await newSession(host);
    const accepted = await host.call('POST', `/sessions/${sessionId}/messages`, message('m1', 'hello'));
    expect(accepted).toEqual({ status: 202, body: { turnId: expect.any(String), runId: expect.any(String), status: 'running' } });
    // Stored before the 202: the turn, its run (trigger `message`) and the user's words.
    expect(await host.storage.getTurn(accepted.body.turnId as string)).toMatchObject({ sessionId, clientRequestId: 'm1', runId: accepted.body.runId, trigger: 'message' });
    await gate.reached;
    const again = await host.call('POST', `/sessions/${sessionId}/turns`, message('m1', 'other words'));
    expect(again).toEqual(accepted);
    gate.release();
    await finished(host, sessionId, accepted.body.turnId as string);
    expect(await host.call('POST', `/sessions/${sessionId}/messages`, message('m1'))).toEqual({ status: 202, body: { ...accepted.body, status: 'completed' } });
    expect(await host.storage.listTurns(sessionId)).toHaveLength(1);

    // The seed's routes are in the OpenAPI document, the entry point with the same request body as /turns.
    const doc = (await host.call('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    expect(doc.paths['/sessions/{sessionId}/messages']?.post?.requestBody).toEqual(doc.paths['/sessions/{sessionId}/turns']?.post?.requestBody);
    for (const path of ['/sessions/{sessionId}/runs', '/runs/{runId}', '/runs/{runId}/events']) expect(doc.paths[path]?.get, path).toBeDefined();

    // Hostile bodies get the same answers as on /turns.
    for (const body of [{}, { clientRequestId: 'x', input: [] }, { clientRequestId: 'x', input: [{ type: 'text', text: 'a' }], extra: 1 }, 'not json']) {
      const viaMessages = await host.call('POST', `/sessions/${sessionId}/messages`, body);
      const viaTurns = await host.call('POST', `/sessions/${sessionId}/turns`, body);
      expect(viaMessages.status).toBeGreaterThanOrEqual(400);
      expect(viaMessages).toEqual(viaTurns);
    }
  });

  it.skipIf(skip)('GET /runs/{runId} says waiting_tool while a tool runs, then completed; the session lists its runs newest first, paged', async () => {
    db = create();
    const held = heldTool('held');
    host = await testHost(db, [{ text: 'looking', toolCalls: [{ name: 'held', args: {} }] }, { text: 'first done' }, { text: 'second' }, { text: 'third' }], {
      runtime: { tools: [held.tool] },
    });
    const sessionId = await newSession(host);
    const first = await host.call('POST', `/sessions/${sessionId}/messages`, message('r1'));
    const runId = first.body.runId as string;
    await held.reached;
    const waiting = await host.call('GET', `/runs/${runId}`);
    expect(waiting).toEqual({
      status: 200,
      body: { runId, sessionId, turnId: first.body.turnId, status: 'waiting_tool', triggerType: 'message', startedAtMs: expect.any(Number) },
    });
    held.release();
    await finished(host, sessionId, first.body.turnId as string);
    const done = await host.call('GET', `/runs/${runId}`);
    expect(done.body).toMatchObject({ status: 'completed', startedAtMs: waiting.body.startedAtMs, endedAtMs: expect.any(Number) });
    expect(done.body).not.toHaveProperty('errorCode');

    const runIds = [runId];
    for (const id of ['r2', 'r3']) {
      const next = await host.call('POST', `/sessions/${sessionId}/messages`, message(id));
      await finished(host, sessionId, next.body.turnId as string);
      runIds.push(next.body.runId as string);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: Record<string, unknown> } = await host.call('GET', `/sessions/${sessionId}/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      const runs = page.body.runs as Record<string, unknown>[];
      for (const run of runs) expect(run).toMatchObject({ sessionId, status: 'completed', triggerType: 'message' });
      seen.push(...runs.map((run) => run.runId as string));
      cursor = page.body.nextCursor as string | null;
    } while (cursor);
    expect(seen).toEqual([...runIds].reverse());

    // Hostile parameters are refused as input errors, unknown ids as missing.
    expect((await host.call('GET', `/sessions/${sessionId}/runs?limit=0`)).status).toBe(400);
    expect((await host.call('GET', `/sessions/${sessionId}/runs?limit=abc`)).status).toBe(400);
    expect((await host.call('GET', `/sessions/${sessionId}/runs?cursor=forged`)).body).toMatchObject({ error: { code: 'InvalidCursor' } });
    expect((await host.call('GET', `/runs/${'r'.repeat(201)}`)).status).toBe(400);
    expect((await host.call('GET', `/runs/run%00x`)).status).toBe(400);
    expect(await host.call('GET', '/runs/run_nope')).toEqual({ status: 404, body: { error: { code: 'UnknownRun', message: "no run 'run_nope'" } } });
    expect((await host.call('GET', '/sessions/ses_nope/runs')).status).toBe(404);
  });

  it.skipIf(skip)('streams a run in the seed\'s names, ends with its end event, resumes by Last-Event-ID and answers 204 after the end', async () => {
    db = create();
    const held = heldTool('held');
    host = await testHost(db, [{ text: 'let me look', toolCalls: [{ name: 'held', args: {} }] }, { text: 'all done' }], { runtime: { tools: [held.tool] } });
    const sessionId = await newSession(host);
    const accepted = await host.call('POST', `/sessions/${sessionId}/messages`, message('e1'));
    const runId = accepted.body.runId as string;
    const sse = await SseClient.connect(`${host.url}/runs/${runId}/events`);
    expect(sse.status).toBe(200);
    await held.reached;
    await sse.next((e) => e.event === 'tool.started');
    held.release();
    await sse.ended;
    expect(names(sse.events)).toEqual(['run.started', 'message.delta', 'tool.started', 'tool.completed', 'message.delta', 'run.completed']);
    for (const event of sse.events) expect(data(event)).toMatchObject({ runId, sessionId, turnId: accepted.body.turnId });
    const toolStarted = sse.events.find((e) => e.event === 'tool.started')!;
    expect(data(toolStarted)).toMatchObject({ name: 'held', toolCallId: expect.any(String) });
    expect(data(sse.events.find((e) => e.event === 'tool.completed')!)).toMatchObject({ status: 'succeeded', toolCallId: data(toolStarted).toolCallId });
    expect(sse.events.filter((e) => e.event === 'message.delta').map((e) => data(e).text).join('')).toBe('let me lookall done');
    expect(data(sse.events.at(-1)!)).toMatchObject({ status: 'completed', finalText: 'all done' });
    const ids = sse.events.map((e) => Number.parseInt(e.id!, 10));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // The end's id says it is the end; the others are the session's sequences.
    expect(sse.events.at(-1)!.id).toBe(`${ids.at(-1)!}-end`);
    expect(sse.events.slice(0, -1).every((e) => /^\d+$/.test(e.id!))).toBe(true);

    // Resumed after the tool started: only what came after.
    const resumed = await SseClient.connect(`${host.url}/runs/${runId}/events`, { 'last-event-id': toolStarted.id! });
    await resumed.ended;
    expect(names(resumed.events)).toEqual(['tool.completed', 'message.delta', 'run.completed']);
    // Back after the end it was given: 204, which stops an EventSource.
    const after = await fetch(`${host.url}/runs/${runId}/events`, { headers: { 'last-event-id': sse.events.at(-1)!.id! } });
    expect(after.status).toBe(204);
    // A new client of an ended run gets it from the start to its end.
    const late = await SseClient.connect(`${host.url}/runs/${runId}/events`);
    await late.ended;
    expect(names(late.events)).toEqual(names(sse.events));
    // The session stream keeps its own names.
    const session = await SseClient.connect(`${host.url}/sessions/${sessionId}/events?after=0`);
    await session.nextUpdate('turn_finished');
    session.close();
    expect(session.events.every((e) => e.event === 'message')).toBe(true);

    expect((await fetch(`${host.url}/runs/run_nope/events`)).status).toBe(404);
    expect((await fetch(`${host.url}/runs/${runId}/events?after=-1`)).status).toBe(400);
  });

  it.skipIf(skip)('streams a queued run from its start, and a run whose session was closed from storage', async () => {
    db = create();
    const gate = gatedStep({ text: 'one' });
    host = await testHost(db, [gate.step, { text: 'two' }]);
    const sessionId = await newSession(host, { busyPolicy: 'enqueue' });
    const one = await host.call('POST', `/sessions/${sessionId}/messages`, message('q1'));
    await gate.reached;
    const two = await host.call('POST', `/sessions/${sessionId}/messages`, message('q2'));
    expect(two.body.status).toBe('queued');
    expect((await host.call('GET', `/runs/${two.body.runId as string}`)).body).toMatchObject({ status: 'queued' });
    const sse = await SseClient.connect(`${host.url}/runs/${two.body.runId as string}/events`);
    gate.release();
    await sse.ended;
    expect(names(sse.events)).toEqual(['run.started', 'message.delta', 'run.completed']);
    await finished(host, sessionId, two.body.turnId as string);

    // Another host on the same database, where the session is not open: the run is told from storage.
    const url = host.url;
    await host.close();
    host = await testHost(db, []);
    expect(host.url).not.toBe(url);
    const stored = await SseClient.connect(`${host.url}/runs/${one.body.runId as string}/events`);
    await stored.ended;
    expect(names(stored.events)).toEqual(['run.started', 'run.completed']);
    expect(data(stored.events[1]!)).toMatchObject({ runId: one.body.runId, status: 'completed', finalText: 'one' });
    // Its end carries an id at or above every sequence issued: coming back with it is 204.
    const back = await fetch(`${host.url}/runs/${one.body.runId as string}/events`, { headers: { 'last-event-id': stored.events[1]!.id! } });
    expect(back.status).toBe(204);
    expect(host.runtime.openHandle(sessionId)).toBeUndefined();
  });

  it.skipIf(skip)('a client that had not been given the end gets it on any host, once; a client that had it gets 204, though the session closed in between', async () => {
    db = create();
    const held = heldTool('held');
    host = await testHost(db, [{ text: 'looking', toolCalls: [{ name: 'held', args: {} }] }], { runtime: { tools: [held.tool] } });
    const sessionId = await newSession(host);
    const accepted = await host.call('POST', `/sessions/${sessionId}/messages`, message('g1'));
    const runId = accepted.body.runId as string;
    const sse = await SseClient.connect(`${host.url}/runs/${runId}/events`);
    await held.reached;
    const toolStarted = await sse.next((e) => e.event === 'tool.started');
    sse.close();
    // The run's host goes away while its tool runs; another host takes the session up, with a ring of its own.
    await host.close();
    host = await testHost(db, [{ text: 'hello again' }]);
    const h = host;
    // The run goes on here (its tool is not here, so it fails) or was ended by its host: either way, then a new run.
    await until('the run to end', async () => ['failed', 'cancelled', 'timed_out', 'completed'].includes((await h.call('GET', `/runs/${runId}`)).body.status as string));
    const next = await host.call('POST', `/sessions/${sessionId}/messages`, message('g2'));
    expect(next.status).toBe(202);
    await finished(host, sessionId, next.body.turnId as string);
    // The client comes back with the last id it had: it gets what it missed up to the run's end, which says it is the end.
    const resumed = await SseClient.connect(`${host.url}/runs/${runId}/events`, { 'last-event-id': toolStarted.id! });
    await resumed.ended;
    const stored = (await host.call('GET', `/runs/${runId}`)).body;
    expect(['failed', 'cancelled', 'timed_out', 'completed']).toContain(stored.status);
    const ends = resumed.events.filter((e) => /^run\.(completed|failed|cancelled|timed_out)$/.test(e.event));
    expect(ends).toEqual([resumed.events.at(-1)]);
    expect(data(ends[0]!)).toMatchObject({ runId, status: stored.status });
    const endId = ends[0]!.id!;
    expect(endId).toMatch(/^\d+-end$/);
    // With the end it was given, the client gets 204, here and on a host where the session is not open.
    expect((await fetch(`${host.url}/runs/${runId}/events`, { headers: { 'last-event-id': endId } })).status).toBe(204);
    await host.close();
    host = await testHost(db, []);
    expect((await fetch(`${host.url}/runs/${runId}/events`, { headers: { 'last-event-id': endId } })).status).toBe(204);
    // Without it, from storage, once.
    const again = await SseClient.connect(`${host.url}/runs/${runId}/events`, { 'last-event-id': toolStarted.id! });
    await again.ended;
    expect(again.events.map((e) => e.event)).toEqual([ends[0]!.event]);
    held.release();
  });

  it.skipIf(skip)('ends the stream of a queued run cancelled before it started with run.cancelled, and a failed run with run.failed and its code', async () => {
    db = create();
    const gate = gatedStep({ text: 'one' });
    host = await testHost(db, [
      gate.step,
      async () => {
        throw new Error('the provider fell over');
      },
    ]);
    const sessionId = await newSession(host, { busyPolicy: 'enqueue' });
    const one = await host.call('POST', `/sessions/${sessionId}/messages`, message('c1'));
    await gate.reached;
    const two = await host.call('POST', `/sessions/${sessionId}/messages`, message('c2'));
    const three = await host.call('POST', `/sessions/${sessionId}/messages`, message('c3'));
    const cancelledStream = await SseClient.connect(`${host.url}/runs/${two.body.runId as string}/events`);
    const failedStream = await SseClient.connect(`${host.url}/runs/${three.body.runId as string}/events`);
    expect((await host.call('POST', `/sessions/${sessionId}/turns/${two.body.turnId as string}/cancel`)).status).toBe(200);
    await cancelledStream.ended;
    expect(names(cancelledStream.events)).toEqual(['run.cancelled']);
    expect((await host.call('GET', `/runs/${two.body.runId as string}`)).body).toMatchObject({ status: 'cancelled' });
    gate.release();
    await finished(host, sessionId, one.body.turnId as string);
    await failedStream.ended;
    expect(names(failedStream.events)).toEqual(['run.started', 'run.failed']);
    expect(data(failedStream.events.at(-1)!)).toMatchObject({ status: 'failed', errorCode: 'model_error' });
    expect((await host.call('GET', `/runs/${three.body.runId as string}`)).body).toMatchObject({ status: 'failed', errorCode: 'model_error' });
  });

  it.skipIf(skip)('a principal sees only its own runs: another one\'s run answers as a missing one', async () => {
    db = create();
    host = await testHost(db, [{ text: 'mine' }], { jwt: { keys: { secret: SECRET } } });
    const [alice, bob] = await Promise.all([bearer('alice'), bearer('bob')]);
    const created = await host.call('POST', '/sessions', {}, alice);
    const sessionId = created.body.sessionId as string;
    const accepted = await host.call('POST', `/sessions/${sessionId}/messages`, message('a1'), alice);
    await finished({ ...host, call: (m, p, b) => host!.call(m, p, b, alice) }, sessionId, accepted.body.turnId as string);
    const runId = accepted.body.runId as string;
    expect((await host.call('GET', `/runs/${runId}`, undefined, alice)).body).toMatchObject({ runId, status: 'completed' });
    expect(await host.call('GET', `/runs/${runId}`, undefined, bob)).toEqual({ status: 404, body: { error: { code: 'UnknownRun', message: `no run '${runId}'` } } });
    expect((await fetch(`${host.url}/runs/${runId}/events`, { headers: bob })).status).toBe(404);
    expect(await host.call('GET', `/sessions/${sessionId}/runs`, undefined, bob)).toEqual({
      status: 404,
      body: { error: { code: 'UnknownSession', message: `no session '${sessionId}'` } },
    });
    expect(await host.call('POST', `/sessions/${sessionId}/messages`, message('b1'), bob)).toEqual({
      status: 404,
      body: { error: { code: 'UnknownSession', message: `no session '${sessionId}'` } },
    });
    expect((await host.call('GET', `/runs/${runId}`)).status).toBe(401);
  });
});
