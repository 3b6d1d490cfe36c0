import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { defineTool, StorageFaultError } from '../../src/index.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, gatedStep, newSession, postTurn, testHost, type TestHost } from '../support/host.js';
import { SseClient } from '../support/sse-client.js';

describe.each(durableTargets)('turns over HTTP on $name (RL-1…RL-3)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });

  it.skipIf(skip)('answers 202 only once the user message is stored, and 503 with no turn when that write fails', async () => {
    db = create();
    host = await testHost(db, [{ text: 'first' }, { text: 'second' }]);
    const sessionId = await newSession(host);

    host.storage.failNext('beginTurn', 1, new StorageFaultError('beginTurn'));
    const refused = await postTurn(host, sessionId, 'r1', 'lost words');
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: 'PersistenceError', message: expect.stringContaining('injected storage fault') } });
    expect(await host.storage.listTurns(sessionId)).toEqual([]);
    expect(await host.storage.listMessages(sessionId)).toEqual([]);

    // The same request again: nothing of it was stored, so it is a new attempt, and this time the write holds.
    const accepted = await postTurn(host, sessionId, 'r1', 'kept words');
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'running', turnId: expect.any(String), runId: expect.any(String) });
    // When the 202 arrives the turn row, its run and the user message are already in the database.
    const stored = await host.storage.getTurn(accepted.body.turnId as string);
    expect(stored).toMatchObject({ sessionId, clientRequestId: 'r1', runId: accepted.body.runId, trigger: 'message' });
    const texts = (await host.storage.listMessages(sessionId)).flatMap((m) => (m.message.role === 'user' && m.message.kind === 'normal' ? [m.message.text] : []));
    expect(texts).toEqual(['kept words']);
    expect(await finished(host, sessionId, accepted.body.turnId as string)).toMatchObject({ status: 'completed', outcome: { finalText: 'first' } });
  });

  it.skipIf(skip)('answers a retried clientRequestId with the same turn, while it runs and after it ended', async () => {
    db = create();
    const gate = gatedStep({ text: 'done once' });
    host = await testHost(db, [gate.step]);
    const sessionId = await newSession(host);
    const first = await postTurn(host, sessionId, 'same');
    await gate.reached;
    const again = await postTurn(host, sessionId, 'same', 'different text, same request');
    expect(again).toEqual({ status: 202, body: { turnId: first.body.turnId, runId: first.body.runId, status: 'running' } });
    gate.release();
    await finished(host, sessionId, first.body.turnId as string);
    const later = await postTurn(host, sessionId, 'same');
    expect(later).toEqual({ status: 202, body: { turnId: first.body.turnId, runId: first.body.runId, status: 'completed' } });
    expect(await host.storage.listTurns(sessionId)).toHaveLength(1);
  });

  it.skipIf(skip)('answers 409 Busy under the reject policy, naming the running turn', async () => {
    db = create();
    const gate = gatedStep();
    host = await testHost(db, [gate.step]);
    const sessionId = await newSession(host, { busyPolicy: 'reject' });
    const running = await postTurn(host, sessionId, 'a');
    const busy = await postTurn(host, sessionId, 'b');
    expect(busy).toEqual({ status: 409, body: { error: { code: 'Busy', message: 'another turn of this session is running', turnId: running.body.turnId } } });
    gate.release();
    await finished(host, sessionId, running.body.turnId as string);
  });

  it.skipIf(skip)('queues turns under enqueue: stored queued, started one at a time in arrival order, a queued one cancelled never starts', async () => {
    db = create();
    const gate = gatedStep({ text: 'one' });
    host = await testHost(db, [gate.step, { text: 'two' }, { text: 'four' }]);
    const sessionId = await newSession(host, { busyPolicy: 'enqueue' });
    const sse = await SseClient.connect(`${host.url}/sessions/${sessionId}/events`);
    const one = await postTurn(host, sessionId, 'c1', 'one');
    await gate.reached;
    const two = await postTurn(host, sessionId, 'c2', 'two');
    const three = await postTurn(host, sessionId, 'c3', 'three');
    const four = await postTurn(host, sessionId, 'c4', 'four');
    for (const queued of [two, three, four]) expect(queued).toMatchObject({ status: 202, body: { status: 'queued' } });
    // Acknowledged means stored: the queued rows are there, with their runs.
    expect((await host.storage.listQueuedTurns(sessionId)).map((q) => q.clientRequestId)).toEqual(['c2', 'c3', 'c4']);
    const snapshot = await host.call('GET', `/sessions/${sessionId}`);
    expect((snapshot.body.queue as { clientRequestId: string }[]).map((q) => q.clientRequestId)).toEqual(['c2', 'c3', 'c4']);

    expect(await host.call('POST', `/sessions/${sessionId}/turns/${three.body.turnId as string}/cancel`)).toEqual({ status: 200, body: { ok: true } });
    expect(await host.call('GET', `/sessions/${sessionId}/turns/${three.body.turnId as string}`)).toEqual({
      status: 200,
      body: { turnId: three.body.turnId, status: 'cancelled', outcome: { status: 'cancelled' } },
    });
    gate.release();
    for (const turn of [one, two, four]) expect(await finished(host, sessionId, turn.body.turnId as string)).toMatchObject({ status: 'completed' });

    await sse.nextUpdate('turn_finished', (await sse.nextUpdate('turn_started', (await sse.nextUpdate('turn_started', (await sse.nextUpdate('turn_started')).sequence)).sequence)).sequence);
    const started = sse.updates.filter((u) => u.update.type === 'turn_started').map((u) => u.turnId);
    expect(started).toEqual([one.body.turnId, two.body.turnId, four.body.turnId]);
    // One at a time: each turn finished before the next started.
    const order = sse.updates.filter((u) => u.update.type === 'turn_started' || u.update.type === 'turn_finished').map((u) => `${u.update.type}:${u.turnId}`);
    expect(order).toEqual([one, two, four].flatMap((t) => [`turn_started:${t.body.turnId as string}`, `turn_finished:${t.body.turnId as string}`]));
    expect(await host.storage.getTurn(three.body.turnId as string)).toMatchObject({ status: 'cancelled' });
    const userTexts = (await host.storage.listMessages(sessionId)).flatMap((m) => (m.message.role === 'user' && m.message.kind === 'normal' ? [m.message.text] : []));
    expect(userTexts).toEqual(['one', 'two', 'four']);
    sse.close();
  });

  it.skipIf(skip)('interrupts under interrupt: the running turn is cancelled (its tool gets a cancelled result) and the new one runs next', async () => {
    db = create();
    let started: () => void = () => undefined;
    const toolStarted = new Promise<void>((resolve) => (started = resolve));
    const slow = defineTool({
      name: 'slow',
      description: 'runs until cancelled',
      effect: 'read',
      input: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((resolve) => {
          started();
          signal.addEventListener('abort', () => resolve({ status: 'cancelled', content: 'stopped' }), { once: true });
        }),
    });
    host = await testHost(db, [{ text: 'working', toolCalls: [{ name: 'slow', args: {} }, { name: 'slow', args: {} }] }, { text: 'the new question' }], {
      runtime: { tools: [slow] },
    });
    const sessionId = await newSession(host, { busyPolicy: 'interrupt', permissionMode: 'auto' });
    const first = await postTurn(host, sessionId, 'i1', 'a long job');
    await toolStarted;
    const second = await postTurn(host, sessionId, 'i2', 'something else');
    expect(second).toMatchObject({ status: 202, body: { status: 'queued' } });
    expect(await finished(host, sessionId, first.body.turnId as string)).toMatchObject({ status: 'cancelled' });
    expect(await finished(host, sessionId, second.body.turnId as string)).toMatchObject({ status: 'completed', outcome: { finalText: 'the new question' } });
    const results = (await host.storage.listMessages(sessionId)).flatMap((m) => (m.message.role === 'tool' ? [m.message.status] : []));
    expect(results).toEqual(['cancelled', 'cancelled']);
  });

  it.skipIf(skip)('ends a run past its time limit timed_out, cancelling the running tool the way a cancel does', async () => {
    db = create();
    const clock = new SimulatedClock();
    let aborted = false;
    let started: () => void = () => undefined;
    const toolStarted = new Promise<void>((resolve) => (started = resolve));
    const hang = defineTool({
      name: 'hang',
      description: 'never returns on its own',
      effect: 'read',
      input: z.object({}),
      execute: (_args, { signal }) =>
        new Promise((resolve) => {
          started();
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve({ status: 'cancelled', content: 'aborted' });
          });
        }),
    });
    host = await testHost(db, [{ text: 'waiting', toolCalls: [{ name: 'hang', args: {} }] }], {
      runtime: { tools: [hang], clock, agents: { default: { runTimeoutMs: 60_000 } } },
    });
    const sessionId = await newSession(host, { permissionMode: 'auto' });
    const turn = await postTurn(host, sessionId, 't1');
    await toolStarted;
    clock.increment(59_999);
    expect((await host.call('GET', `/sessions/${sessionId}/turns/${turn.body.turnId as string}`)).body.status).toBe('running');
    clock.increment(1);
    const ended = await finished(host, sessionId, turn.body.turnId as string);
    expect(ended).toEqual({ turnId: turn.body.turnId, status: 'timed_out', outcome: { status: 'timed_out', message: 'the run passed its time limit of 60000 ms' } });
    expect(aborted).toBe(true);
    expect(await host.storage.getTurn(turn.body.turnId as string)).toMatchObject({ status: 'timed_out', errorCode: 'run_timeout' });
    const result = (await host.storage.listMessages(sessionId)).find((m) => m.message.role === 'tool');
    expect(result?.message).toMatchObject({ status: 'cancelled', content: 'tool call cancelled: the run passed its time limit' });
  });
});
