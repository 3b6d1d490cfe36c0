import { randomUUID } from 'node:crypto';
import { connect, type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { clusterOf } from '../../src/cluster/cluster.js';
import type { CommandReply, CommandRequest } from '../../src/cluster/messages.js';
import { commandQueueOf } from '../../src/cluster/names.js';
import { RpcClient } from '../../src/cluster/rpc-client.js';
import type { Authenticate } from '../../src/host/auth.js';
import { scriptedModel } from '../../src/index.js';
import type { Caller } from '../../src/protocol/principal.js';
import { clusterSkipReason } from '../support/cluster-hosts.js';
import { postgresSchema, POSTGRES_URL, type DurableDatabase } from '../support/databases.js';
import { testHost, type TestHost } from '../support/host.js';
import { SseClient } from '../support/sse-client.js';

/** The embedder's scheme the hosts use: the `x-user` header names one of these callers. */
const CALLERS: Record<string, Caller> = {
  alice: { principal: 'alice', roles: [] },
  bob: { principal: 'bob', roles: [] },
  root: { principal: 'root', roles: ['admin'] },
};
const authenticate: Authenticate = (request) => CALLERS[request.headers.get('x-user') ?? ''] ?? null;
const as = (user: keyof typeof CALLERS) => ({ 'x-user': user });
const turn = (clientRequestId: string, text = 'hello') => ({ clientRequestId, input: [{ type: 'text', text }] });

/**
 * Issue 25 across a cluster: a session belongs to the principal who created it on whichever host,
 * and another host of the cluster routes only its owner's (or an admin's) requests to the host that
 * holds it. A request another principal makes is told `UnknownSession`, word for word what a missing
 * id is told, by the host it reached; and the holder checks the caller of every routed command
 * again, so a command forged on the broker with the wrong caller is refused there.
 */
describe.skipIf(clusterSkipReason !== null)('principals on a cluster of two hosts', { timeout: 60_000 }, () => {
  let db: DurableDatabase | undefined;
  let broker: ChannelModel | undefined;
  const hosts: TestHost[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    await broker?.close();
    for (const host of hosts.splice(0)) await host.close();
    await db?.drop();
    broker = db = undefined;
  });

  /** Host A runs every turn (its script); host B has no model reply at all, so a turn run there would fail. */
  async function twoHosts(replies: string[]) {
    db = postgresSchema(POSTGRES_URL!);
    const cluster = () => clusterOf({ amqpUrl: process.env.TEST_AMQP_URL!, routeTimeoutMs: 10_000 });
    const modelA = scriptedModel(replies.map((text) => ({ text })));
    const modelB = scriptedModel([]);
    const a = await testHost(db, modelA, { cluster: cluster(), authenticate, runtime: { ownership: { host: 'a.principals.test' } } });
    hosts.push(a);
    const b = await testHost(db, modelB, { cluster: cluster(), authenticate, runtime: { ownership: { host: 'b.principals.test' } } });
    hosts.push(b);
    return { a, b, modelA, modelB };
  }

  /** Alice's session, created on A, which holds it. */
  async function alicesSession(a: TestHost): Promise<string> {
    const created = await a.call('POST', '/sessions', { permissionMode: 'auto' }, as('alice'));
    expect(created.status).toBe(201);
    const sessionId = created.body.sessionId as string;
    expect((await a.storage.getSession(sessionId))?.principal).toBe('alice');
    return sessionId;
  }

  /** Waits on the API's own `?wait` until the turn has ended. */
  async function ended(host: TestHost, sessionId: string, turnId: string, user: keyof typeof CALLERS) {
    for (;;) {
      const state = await host.call('GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`, undefined, as(user));
      if (state.status !== 200 || (state.body.status !== 'running' && state.body.status !== 'queued')) return state;
    }
  }

  /**
   * Every request about a session that a host of this process routes to another from now on, as it
   * sends it (a follower's periodic `holds` check names no session and no caller).
   */
  function watchRouting(): () => Extract<CommandRequest, { caller: Caller }>[] {
    const spy = vi.spyOn(RpcClient.prototype, 'call');
    return () => spy.mock.calls.map(([, request]) => request).filter((request) => 'caller' in request);
  }

  it("routes alice's requests through B to A; bob is told through B what a missing id is told, and nothing of his reaches A; an admin acts on it", async () => {
    const { a, b, modelA, modelB } = await twoHosts(['done on A for alice', 'done on A for root']);
    const routed = watchRouting();
    const sessionId = await alicesSession(a);
    expect(a.runtime.isOpen(sessionId)).toBe(true);

    // Alice through B: the snapshot, an event stream, a turn and its wait, all answered by A.
    const snapshot = await b.call('GET', `/sessions/${sessionId}`, undefined, as('alice'));
    expect(snapshot).toMatchObject({ status: 200, body: { sessionId } });
    const events = await SseClient.connect(`${b.url}/sessions/${sessionId}/events`, as('alice'));
    try {
      expect(events.status).toBe(200);
      await events.next((e) => e.event === 'snapshot');
      const started = await b.call('POST', `/sessions/${sessionId}/turns`, turn('alice-1'), as('alice'));
      expect(started).toMatchObject({ status: 202 });
      const turnId = started.body.turnId as string;
      expect(await ended(b, sessionId, turnId, 'alice')).toMatchObject({ status: 200, body: { status: 'completed', outcome: { finalText: 'done on A for alice' } } });
      const finishedEvent = await events.nextUpdate('turn_finished');
      expect(finishedEvent.turnId).toBe(turnId);
      expect(events.updates.filter((u) => u.update.type === 'text_delta').map((u) => u.update.text).join('')).toBe('done on A for alice');
    } finally {
      events.close();
    }
    expect([modelA.requests.length, modelB.requests.length]).toEqual([1, 0]);
    expect(b.runtime.isOpen(sessionId)).toBe(false);
    expect(new Set(routed().map((r) => r.caller.principal))).toEqual(new Set(['alice']));
    expect(new Set(routed().map((r) => (r.op === 'command' ? r.name : r.op)))).toEqual(new Set(['snapshot', 'feed', 'submitTurn', 'turnState']));
    const [aliceTurn] = await a.storage.listTurns(sessionId);

    // Bob through B: every session route answers as for an id nobody ever created, and nothing is routed.
    const missing = `ses_${randomUUID()}`;
    const requests: [method: string, path: string, body?: unknown][] = [
      ['GET', ''],
      ['GET', '/context'],
      ['GET', '/messages'],
      ['GET', '/audit'],
      ['GET', '/events'],
      ['POST', '/turns', turn('bob-1')],
      ['POST', '/messages', turn('bob-2')],
      ['GET', '/runs'],
      ['GET', `/turns/${aliceTurn!.id}?wait=5`],
      ['POST', `/turns/${aliceTurn!.id}/cancel`],
      ['POST', `/turns/${aliceTurn!.id}/permissions/call_x`, { decision: 'allow_once' }],
      ['PUT', '/permission-mode', { mode: 'read_only' }],
      ['PUT', '/agent', { agent: 'default' }],
      ['POST', '/agent-messages', { from: missing, text: 'hi alice' }],
      ['POST', '/compact'],
      ['POST', '/rewind', { compactionId: 'cmp_x' }],
    ];
    for (const [method, path, body] of requests) {
      const bobs = await b.call(method, `/sessions/${sessionId}${path}`, body, as('bob'));
      const nobodys = await b.call(method, `/sessions/${missing}${path}`, body, as('bob'));
      expect({ route: `${method} ${path}`, ...bobs }).toEqual({ route: `${method} ${path}`, status: 404, body: { error: { code: 'UnknownSession', message: `no session '${sessionId}'` } } });
      expect(JSON.stringify(bobs).replaceAll(sessionId, '<id>')).toBe(JSON.stringify(nobodys).replaceAll(missing, '<id>'));
    }
    expect((await b.call('GET', '/sessions', undefined, as('bob'))).body.sessions).toEqual([]);
    expect(routed().filter((r) => r.caller.principal === 'bob')).toEqual([]);
    // A ran nothing for him, and the session is as alice left it.
    expect(modelA.requests.length).toBe(1);
    expect((await a.storage.listTurns(sessionId)).map((t) => t.id)).toEqual([aliceTurn!.id]);
    expect((await a.storage.getSession(sessionId))?.permissionMode).toBe('auto');

    // An admin through B: listed, read, and a turn run on A.
    expect((await b.call('GET', '/sessions', undefined, as('root'))).body.sessions).toEqual([expect.objectContaining({ sessionId, principal: 'alice' })]);
    expect(await b.call('GET', `/sessions/${sessionId}`, undefined, as('root'))).toMatchObject({ status: 200, body: { sessionId } });
    const byRoot = await b.call('POST', `/sessions/${sessionId}/turns`, turn('root-1'), as('root'));
    expect(byRoot).toMatchObject({ status: 202 });
    expect(await ended(b, sessionId, byRoot.body.turnId as string, 'root')).toMatchObject({ status: 200, body: { status: 'completed', outcome: { finalText: 'done on A for root' } } });
    expect(await b.call('PUT', `/sessions/${sessionId}/permission-mode`, { mode: 'read_only' }, as('root'))).toMatchObject({ status: 200 });
    expect((await a.storage.getSession(sessionId))?.permissionMode).toBe('read_only');
    expect([modelA.requests.length, modelB.requests.length]).toEqual([2, 0]);
    expect(routed().some((r) => r.caller.principal === 'root' && r.op === 'command' && r.name === 'submitTurn')).toBe(true);
    expect(b.runtime.isOpen(sessionId)).toBe(false);
  });

  it('the owning host checks the caller again: a command forged on the broker with bob as its caller is refused there with UnknownSession', async () => {
    const { a, modelA } = await twoHosts(['done on A for the forged alice']);
    const sessionId = await alicesSession(a);
    const ask = await forger(a.runtime.ownership.identity.ownerId);

    // Bob's commands, sent straight to A's queue as a routing host sends them: none runs.
    const refused = { ok: false, error: { code: 'UnknownSession', message: `no session '${sessionId}'` } };
    const bob = CALLERS.bob!;
    expect(await ask({ op: 'command', sessionId, caller: bob, name: 'submitTurn', input: turn('forged-bob') })).toEqual(refused);
    expect(await ask({ op: 'command', sessionId, caller: bob, name: 'setPermissionMode', input: 'read_only' })).toEqual(refused);
    expect(await ask({ op: 'snapshot', sessionId, caller: bob })).toEqual(refused);
    expect(await ask({ op: 'turnState', sessionId, caller: bob, turnId: 'turn_x', waitMs: 0 })).toEqual(refused);
    expect(await ask({ op: 'context', sessionId, caller: bob })).toEqual(refused);
    expect(await ask({ op: 'feed', sessionId, caller: bob, after: null })).toEqual(refused);
    // An id nobody created is told the same.
    const missing = `ses_${randomUUID()}`;
    expect(await ask({ op: 'snapshot', sessionId: missing, caller: bob })).toEqual({ ok: false, error: { code: 'UnknownSession', message: `no session '${missing}'` } });
    // A request without a caller is not one the owner reads at all.
    expect(await ask({ op: 'snapshot', sessionId })).toMatchObject({ ok: false, error: { code: 'InvalidInput' } });
    expect(modelA.requests).toHaveLength(0);
    expect(await a.storage.listTurns(sessionId)).toEqual([]);
    expect((await a.storage.getSession(sessionId))?.permissionMode).toBe('auto');

    // The same forgery with alice as the caller runs: the refusal was the caller's, not the channel's.
    const alice = CALLERS.alice!;
    expect(await ask({ op: 'snapshot', sessionId, caller: alice })).toMatchObject({ ok: true, value: { sessionId } });
    const submitted = (await ask({ op: 'command', sessionId, caller: alice, name: 'submitTurn', input: turn('forged-alice') })) as {
      ok: true;
      value: { ok: true; turnId: string };
    };
    expect(submitted).toMatchObject({ ok: true, value: { ok: true, turnId: expect.any(String) } });
    expect(await ask({ op: 'turnState', sessionId, caller: alice, turnId: submitted.value.turnId, waitMs: 30_000 })).toMatchObject({
      ok: true,
      value: { ok: true, status: 'completed', outcome: { finalText: 'done on A for the forged alice' } },
    });
    // An admin's forged snapshot is answered too.
    expect(await ask({ op: 'snapshot', sessionId, caller: CALLERS.root! })).toMatchObject({ ok: true, value: { sessionId } });
  });

  /**
   * Publishes requests on the owner's command queue the way `RpcClient` does (mandatory, a
   * `correlationId`, a reply queue of its own as `replyTo`, an expiry) and resolves with each reply.
   */
  async function forger(ownerId: string): Promise<(request: unknown) => Promise<CommandReply>> {
    broker = await connect(process.env.TEST_AMQP_URL!);
    const channel: Channel = await broker.createChannel();
    const { queue: replyTo } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    const waiting = new Map<string, (reply: CommandReply) => void>();
    await channel.consume(
      replyTo,
      (message: ConsumeMessage | null) => {
        if (!message) return;
        const correlationId = String(message.properties.correlationId);
        waiting.get(correlationId)?.(JSON.parse(message.content.toString('utf8')) as CommandReply);
        waiting.delete(correlationId);
      },
      { noAck: true },
    );
    const returned = new Promise<never>((_, reject) => channel.on('return', () => reject(new Error(`nothing consumes ${commandQueueOf(ownerId)}`))));
    returned.catch(() => undefined);
    return (request) => {
      const correlationId = randomUUID();
      const reply = new Promise<CommandReply>((resolve) => waiting.set(correlationId, resolve));
      channel.publish('', commandQueueOf(ownerId), Buffer.from(JSON.stringify(request)), {
        correlationId,
        replyTo,
        mandatory: true,
        persistent: false,
        contentType: 'application/json',
        expiration: '30000',
      });
      return Promise.race([reply, returned]);
    };
  }
});
