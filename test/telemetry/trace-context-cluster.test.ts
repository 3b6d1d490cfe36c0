import { afterEach, describe, expect, it } from 'vitest';
import { clusterOf } from '../../src/cluster/cluster.js';
import { scriptedModel } from '../../src/index.js';
import { clusterSkipReason } from '../support/cluster-hosts.js';
import { postgresSchema, POSTGRES_URL, type DurableDatabase } from '../support/databases.js';
import { finished, testHost, type TestHost } from '../support/host.js';
import { CALLER_TRACE_PARENT, TurnSpanLog } from '../support/turn-span-log.js';
import { userMessage } from '../support/ui-chat-client.js';

const OTHER_TRACE_PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/**
 * Issue 27 across a cluster: a turn started through a host that does not hold the session is a
 * command routed over RabbitMQ to the one that does; the caller's trace context travels in it, and
 * the owner's turn span starts as its child.
 */
describe.skipIf(clusterSkipReason !== null)('trace context on a cluster of two hosts', { timeout: 60_000 }, () => {
  let db: DurableDatabase | undefined;
  let spans: TurnSpanLog | undefined;
  const hosts: TestHost[] = [];
  afterEach(async () => {
    spans?.close();
    for (const host of hosts.splice(0)) await host.close();
    await db?.drop();
    db = spans = undefined;
  });

  it("a turn started through B on A's session is a child of the caller's span on A, by POST /turns and by /api/chat", async () => {
    db = postgresSchema(POSTGRES_URL!);
    const cluster = () => clusterOf({ amqpUrl: process.env.TEST_AMQP_URL!, routeTimeoutMs: 10_000 });
    const a = await testHost(db, scriptedModel([{ text: 'one on A' }, { text: 'two on A' }]), { cluster: cluster(), runtime: { ownership: { host: 'a.trace.test' } } });
    hosts.push(a);
    // B has no model reply at all: a turn run there would fail.
    const b = await testHost(db, scriptedModel([]), { cluster: cluster(), runtime: { ownership: { host: 'b.trace.test' } } });
    hosts.push(b);
    spans = new TurnSpanLog(a.runtime);
    const created = await a.call('POST', '/sessions', { permissionMode: 'auto' });
    expect(created.status).toBe(201);
    const sessionId = created.body.sessionId as string;

    const started = await b.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'hello' }] }, { traceparent: CALLER_TRACE_PARENT });
    expect(started.status).toBe(202);
    const turnId = started.body.turnId as string;
    expect((await spans.started(`turn:${turnId}`)).traceParent).toBe(CALLER_TRACE_PARENT);
    expect(await finished(b, sessionId, turnId)).toMatchObject({ status: 'completed', outcome: { finalText: 'one on A' } });
    expect(b.runtime.isOpen(sessionId)).toBe(false);

    const chat = await fetch(`${b.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: OTHER_TRACE_PARENT },
      body: JSON.stringify({ id: sessionId, messages: [userMessage('u2', 'again')], trigger: 'submit-message' }),
    });
    expect(chat.status).toBe(200);
    expect(await chat.text()).toContain('"type":"finish"');
    const second = (await a.storage.listTurns(sessionId)).find((t) => t.clientRequestId === 'u2')!;
    expect((await spans.started(`turn:${second.id}`)).traceParent).toBe(OTHER_TRACE_PARENT);
    expect(second.traceParent).toBe(OTHER_TRACE_PARENT);
    expect(b.runtime.isOpen(sessionId)).toBe(false);
  });
});
