import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpChatClient } from '../../src/cli/chat-http.js';
import { sqliteFile } from '../support/databases.js';
import { testHost } from '../support/host.js';
import { until } from '../support/poll.js';
import { tcpProxy } from '../support/tcp-proxy.js';

/**
 * Issue 26: the chat's requests while its host is away. The host sits behind a TCP proxy (a port
 * forward, a load balancer) that the test takes away and gives back.
 */
describe('the chat client over HTTP while the host is away', { timeout: 30_000 }, () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function setUp(retryForMs?: number) {
    const db = sqliteFile();
    const host = await testHost(db, [], { allowedHosts: ['127.0.0.1'] });
    cleanup.push(() => db.drop(), () => host.close());
    const proxy = await tcpProxy('127.0.0.1', Number(new URL(host.url).port));
    cleanup.push(() => proxy.close());
    const client = httpChatClient({ url: `http://127.0.0.1:${proxy.port}`, requestTimeoutMs: 5_000, ...(retryForMs !== undefined && { retryForMs }) });
    cleanup.push(() => client.close());
    return { proxy, client };
  }

  it('sends a command again until the host answers: a turn started while it was away starts once', async () => {
    const { proxy, client } = await setUp();
    const { sessionId } = await client.createSession({ permissionMode: 'auto' });
    await proxy.cut();
    // In the proxy's place, a host going down: it takes each connection and drops it unanswered.
    let dropped = 0;
    const dying = net.createServer((socket) => {
      dropped += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => dying.listen(proxy.port, '127.0.0.1', resolve));
    const started = client.submitTurn(sessionId, { clientRequestId: 'while-away', input: [{ type: 'text', text: 'hello' }] });
    await until('two attempts to go unanswered', () => dropped >= 2);
    await new Promise<void>((resolve) => dying.close(() => resolve()));
    await proxy.restore();
    const { turnId } = await started;
    // Sent again, it is the same turn: the first attempts never reached the host, and this one started it once.
    expect(await client.submitTurn(sessionId, { clientRequestId: 'while-away', input: [{ type: 'text', text: 'hello' }] })).toMatchObject({ turnId });
  });

  it('gives up after its window with the error the host\'s absence gave; one that never reached a host fails at once', async () => {
    const { proxy, client } = await setUp(600);
    const { sessionId } = await client.createSession({});
    await proxy.cut();
    const began = Date.now();
    await expect(client.context(sessionId)).rejects.toMatchObject({ code: 'HostUnreachable' });
    expect(Date.now() - began).toBeGreaterThanOrEqual(250);

    const nobody = httpChatClient({ url: 'http://127.0.0.1:1' });
    cleanup.push(() => nobody.close());
    await expect(nobody.listSessions(5)).rejects.toMatchObject({ code: 'HostUnreachable' });
  });

  it('a request waiting for the host gives up when the chat closes', async () => {
    const { proxy, client } = await setUp();
    const { sessionId } = await client.createSession({});
    await proxy.cut();
    const waiting = client.context(sessionId);
    await client.close();
    await expect(waiting).rejects.toMatchObject({ code: 'HostUnreachable' });
  });
});
