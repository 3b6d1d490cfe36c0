import { connect, type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterOf } from '../../src/cluster/cluster.js';
import { commandRequestSchema } from '../../src/cluster/messages.js';
import { commandQueueOf } from '../../src/cluster/names.js';
import { clusterSkipReason } from '../support/cluster-hosts.js';
import { postgresSchema, POSTGRES_URL, type DurableDatabase } from '../support/databases.js';
import { newSession, testHost, type TestHost } from '../support/host.js';

/**
 * A cluster host routing to an owner the test plays on the broker itself: an owner with no queue
 * (it died; its lease still runs), one that never answers, and one whose answers are typed errors
 * or garbage. The host's answers must be typed all the same.
 */
describe.skipIf(clusterSkipReason !== null)('routing a command to another host: what the caller is told when the owner fails', () => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  let broker: ChannelModel | undefined;
  afterEach(async () => {
    await broker?.close();
    await host?.close();
    await db?.drop();
    broker = host = db = undefined;
  });

  /** A session on a cluster host, then held (for a minute) by an owner that exists only on paper. */
  async function heldByAStranger(ownerId: string, routeTimeoutMs = 300): Promise<{ host: TestHost; sessionId: string }> {
    db = postgresSchema(POSTGRES_URL!);
    host = await testHost(db, [], { cluster: clusterOf({ amqpUrl: process.env.TEST_AMQP_URL!, routeTimeoutMs }) });
    const sessionId = await newSession(host);
    await host.runtime.openHandle(sessionId)!.close();
    const taken = await host.storage.acquireSession(sessionId, { ownerId, host: 'elsewhere.example', pid: 4242, ttlMs: 60_000 }, 0);
    expect(taken.ok).toBe(true);
    return { host, sessionId };
  }

  /** The stranger's command queue on the broker; `answer` decides each reply (undefined: none). */
  async function playOwner(ownerId: string, answer: (body: unknown) => unknown): Promise<unknown[]> {
    broker = await connect(process.env.TEST_AMQP_URL!);
    const channel: Channel = await broker.createChannel();
    const queue = commandQueueOf(ownerId);
    await channel.assertQueue(queue, { exclusive: true, autoDelete: true, durable: false });
    const received: unknown[] = [];
    await channel.consume(
      queue,
      (message: ConsumeMessage | null) => {
        if (!message) return;
        const body = JSON.parse(message.content.toString('utf8')) as unknown;
        received.push({ body, properties: message.properties });
        const reply = answer(body);
        if (reply === undefined) return;
        const content = Buffer.from(typeof reply === 'string' ? reply : JSON.stringify(reply));
        channel.sendToQueue(message.properties.replyTo as string, content, { correlationId: message.properties.correlationId as string });
      },
      { noAck: true },
    );
    return received;
  }

  it('an owner with no queue: 503 OwnerUnavailable, with how long its lease still runs', async () => {
    const { host: h, sessionId } = await heldByAStranger('owner_gone');
    const response = await fetch(`${h.url}/sessions/${sessionId}`);
    expect(response.status).toBe(503);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await response.json()).toMatchObject({ error: { code: 'OwnerUnavailable', retryAfterMs: expect.any(Number) } });
  });

  it('an owner that never answers: 504 OwnerTimeout; the command it was sent is well formed and expires with the wait', async () => {
    const { host: h, sessionId } = await heldByAStranger('owner_silent');
    const received = await playOwner('owner_silent', () => undefined);
    expect(await h.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'hi' }] })).toMatchObject({
      status: 504,
      body: { error: { code: 'OwnerTimeout' } },
    });
    const [sent] = received as { body: unknown; properties: { correlationId: string; replyTo: string; expiration: string } }[];
    expect(commandRequestSchema.parse(sent!.body)).toMatchObject({ op: 'command', name: 'submitTurn', sessionId, input: { clientRequestId: 'r1' } });
    expect(sent!.properties).toMatchObject({ correlationId: expect.any(String), replyTo: expect.any(String), expiration: '300' });
  });

  it('an owner that dies holding commands: 503 OwnerUnavailable once its queue is gone, long before the timeout (issue 26)', async () => {
    // A minute's route timeout: an answer that came from it would fail the test's clock by far.
    const { host: h, sessionId } = await heldByAStranger('owner_dying', 60_000);
    let taken!: () => void;
    const bothTaken = new Promise<void>((resolve) => (taken = resolve));
    // The owner takes the commands and never answers (its turn read waits, its command runs on) — then its process dies.
    const received = await playOwner('owner_dying', () => {
      // Probes (rpc-client.ts) come to the queue too: the commands are what it must hold.
      if (received.filter((m) => (m as { properties: { type?: string } }).properties.type !== 'probe').length === 2) taken();
      return undefined;
    });
    const started = performance.now();
    const read = fetch(`${h.url}/sessions/${sessionId}/turns/turn_x?wait=30`);
    const command = h.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'hi' }] });
    await bothTaken;
    // Its connection goes, and its exclusive queue with it: the requests it had taken will never be answered.
    await broker!.close();
    broker = undefined;
    const diedAt = performance.now();
    const [readAnswer, commandAnswer] = await Promise.all([read, command]);
    expect(performance.now() - diedAt).toBeLessThan(1_000);
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(readAnswer.status).toBe(503);
    expect(Number(readAnswer.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await readAnswer.json()).toMatchObject({ error: { code: 'OwnerUnavailable', retryAfterMs: expect.any(Number) } });
    expect(commandAnswer).toMatchObject({ status: 503, body: { error: { code: 'OwnerUnavailable', retryAfterMs: expect.any(Number) } } });
  });

  it("an owner's typed answers come back as they are; an unreadable one is a 500 without detail", async () => {
    const { host: h, sessionId } = await heldByAStranger('owner_odd');
    let next: unknown;
    await playOwner('owner_odd', () => next);
    next = { ok: false, error: { code: 'Busy', message: 'another turn of this session is running', turnId: 'turn_x' } };
    expect(await h.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'hi' }] })).toEqual({
      status: 409,
      body: { error: { code: 'Busy', message: 'another turn of this session is running', turnId: 'turn_x' } },
    });
    next = { ok: false, error: { code: 'SessionMoved', message: 'not here' } };
    expect(await h.call('GET', `/sessions/${sessionId}`)).toMatchObject({ status: 409, body: { error: { code: 'SessionOwnedElsewhere' } } });
    next = 'not json';
    expect(await h.call('GET', `/sessions/${sessionId}`)).toMatchObject({ status: 500, body: { error: { code: 'InternalError' } } });
    next = { ok: true, value: { ok: true, turnId: 'turn_y', status: 'completed', outcome: { status: 'completed', finalText: 'fine' } } };
    expect(await h.call('GET', `/sessions/${sessionId}/turns/turn_y`)).toEqual({
      status: 200,
      body: { turnId: 'turn_y', status: 'completed', outcome: { status: 'completed', finalText: 'fine' } },
    });
  });

  it("an owner's command answer outside the command's catalog entry is refused as a typed error, never passed on", async () => {
    const { host: h, sessionId } = await heldByAStranger('owner_lax');
    let next: unknown;
    await playOwner('owner_lax', () => next);
    const setMode = () => h.call('PUT', `/sessions/${sessionId}/permission-mode`, { mode: 'auto' });

    // A refusal the command lists comes back as it is.
    next = { ok: true, value: { ok: false, error: { code: 'PersistenceError', message: 'disk full' } } };
    expect(await setMode()).toEqual({ status: 503, body: { error: { code: 'PersistenceError', message: 'disk full' } } });
    // Busy is another command's refusal (a turn's), not setPermissionMode's.
    next = { ok: true, value: { ok: false, error: { code: 'Busy', turnId: 'turn_x' } } };
    expect(await setMode()).toMatchObject({ status: 500, body: { error: { code: 'InternalError' } } });
    // A code nothing answers, and a listed code without the fields it carries.
    next = { ok: true, value: { ok: false, error: { code: 'Whatever', message: 'made up' } } };
    expect(await setMode()).toMatchObject({ status: 500, body: { error: { code: 'InternalError' } } });
    next = { ok: true, value: { ok: false, error: { code: 'PersistenceError' } } };
    expect(await setMode()).toMatchObject({ status: 500, body: { error: { code: 'InternalError' } } });
    // A success without the command's fields (a compaction's id).
    next = { ok: true, value: { ok: true } };
    expect(await h.call('POST', `/sessions/${sessionId}/compact`)).toMatchObject({ status: 500, body: { error: { code: 'InternalError' } } });
    next = { ok: true, value: { ok: true, compactionId: 'cmp_1' } };
    expect(await h.call('POST', `/sessions/${sessionId}/compact`)).toEqual({ status: 200, body: { ok: true, compactionId: 'cmp_1' } });
  });
});
