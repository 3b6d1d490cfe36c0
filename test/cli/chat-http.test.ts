import { afterEach, describe, expect, it } from 'vitest';
import { httpChatClient } from '../../src/cli/chat-http.js';
import type { ChatClient, FeedEvent } from '../../src/cli/chat-client.js';
import { sqliteFile } from '../support/databases.js';
import { finished, gatedStep, testHost, type TestHost } from '../support/host.js';
import { tcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from './chat-process.js';

describe('the chat client over HTTP', { timeout: 30_000 }, () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function setUp(steps: Parameters<typeof testHost>[1]): Promise<{ host: TestHost; proxy: TcpProxy; client: ChatClient }> {
    const db = sqliteFile();
    // The client reaches the host through a proxy on another port, as through a port forward: its Host names that port.
    const host = await testHost(db, steps, { allowedHosts: ['127.0.0.1'] });
    cleanup.push(() => db.drop(), () => host.close());
    const proxy = await tcpProxy('127.0.0.1', Number(new URL(host.url).port));
    cleanup.push(() => proxy.close());
    const client = httpChatClient({ url: `http://127.0.0.1:${proxy.port}`, requestTimeoutMs: 5_000 });
    cleanup.push(() => client.close());
    return { host, proxy, client };
  }

  it('resumes the event stream with Last-Event-ID after the connection drops: nothing missed, nothing twice', async () => {
    const gate = gatedStep({ text: 'the answer after the outage' });
    const { host, proxy, client } = await setUp([gate.step]);
    const { sessionId } = await client.createSession({ permissionMode: 'auto' });
    const events: FeedEvent[] = [];
    const feed = client.follow(sessionId, (event) => events.push(event));
    cleanup.push(async () => feed.close());
    await feed.ready;
    const { turnId } = await client.submitTurn(sessionId, { clientRequestId: 'req-1', input: [{ type: 'text', text: 'hello' }] });
    await gate.reached;
    await until(() => events.some((e) => e.kind === 'update' && e.envelope.update.type === 'phase_changed'), 'the turn to be under way');
    await expect(client.submitTurn(sessionId, { clientRequestId: 'req-2', input: [{ type: 'text', text: 'again' }] })).rejects.toMatchObject({ code: 'Busy' });

    await proxy.cut();
    await until(() => events.some((e) => e.kind === 'connection_lost'), 'the client to notice');
    // A request while the host is away waits for it to come back (issue 26) rather than failing.
    const context = client.context(sessionId);
    // The turn ends while the client is away.
    gate.release();
    expect(await finished(host, sessionId, turnId)).toMatchObject({ status: 'completed' });
    await proxy.restore();
    await expect(context).resolves.toMatchObject({ percentUsed: expect.any(Number) });
    await until(() => events.some((e) => e.kind === 'update' && e.envelope.update.type === 'turn_finished'), 'the missed updates');

    expect(events.filter((e) => e.kind === 'snapshot')).toHaveLength(1);
    expect(events.filter((e) => e.kind === 'connection_restored')).toHaveLength(1);
    const sequences = events.flatMap((e) => (e.kind === 'update' ? [e.envelope.sequence] : []));
    expect(sequences).toEqual(sequences.map((_, i) => sequences[0]! + i));
    const text = events.flatMap((e) => (e.kind === 'update' && e.envelope.update.type === 'text_delta' ? [e.envelope.update.text] : [])).join('');
    expect(text).toBe('the answer after the outage');
  });

  it('answers refusals with the host\'s codes, and a stream the host refuses ends the feed', async () => {
    const { client } = await setUp([]);
    await expect(client.openSession('ses_missing')).rejects.toMatchObject({ code: 'UnknownSession', message: "no session 'ses_missing'" });
    await expect(client.setPermissionMode('ses_missing', 'auto')).rejects.toMatchObject({ code: 'UnknownSession' });
    const events: FeedEvent[] = [];
    const feed = client.follow('ses_missing', (event) => events.push(event));
    await expect(feed.ready).rejects.toMatchObject({ code: 'UnknownSession' });
    expect(events).toEqual([{ kind: 'ended', error: expect.objectContaining({ code: 'UnknownSession' }) }]);

    const nobody = httpChatClient({ url: 'http://127.0.0.1:1', requestTimeoutMs: 2_000 });
    await expect(nobody.listSessions(5)).rejects.toMatchObject({ code: 'HostUnreachable' });
  });

  it('finds a tool call\'s arguments in the stored conversation', async () => {
    const { client, host } = await setUp([{ text: 'listing', toolCalls: [{ name: 'list_dir', args: { path: '.' } }] }, { text: 'done' }]);
    const { sessionId } = await client.createSession({ permissionMode: 'auto' });
    const { turnId } = await client.submitTurn(sessionId, { clientRequestId: 'req-1', input: [{ type: 'text', text: 'look' }] });
    await finished(host, sessionId, turnId);
    const messages = (await host.call('GET', `/sessions/${sessionId}/messages`)).body.messages as { message: { role: string; toolCalls?: { id: string }[] } }[];
    const callId = messages.find((m) => m.message.role === 'assistant' && m.message.toolCalls?.length)!.message.toolCalls![0]!.id;
    expect(await client.toolCall(sessionId, callId)).toEqual({ name: 'list_dir', argumentsText: '{"path":"."}' });
    expect(await client.toolCall(sessionId, 'call_unknown')).toBeNull();
  });
});
