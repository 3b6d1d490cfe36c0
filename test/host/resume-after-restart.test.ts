import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { run, sequencesOf } from '../support/cluster-hosts.js';
import { sqliteFile } from '../support/databases.js';
import { sse, startFakeOpenAiServer, type FakeOpenAiServer } from '../support/fake-openai-server.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { SseClient, type Envelope } from '../support/sse-client.js';
import { fold, texts, UiChatClient, userMessage } from '../support/ui-chat-client.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-resume-');

/**
 * Issue 26, the clients' side: a `turnchart serve` process SIGKILLed and started again on the same
 * port and SQLite file, and clients coming back with where they were. After a crash the new process
 * numbers its updates above the block the dead one had reserved, so an event stream resumed with the
 * last id it saw always gets `snapshot_required` — and then, issue 26, the whole continuation, even
 * what ran before it was back: nothing lost, nothing twice.
 */
describe('clients resuming after their host was SIGKILLed and restarted', { timeout: 90_000 }, () => {
  const hosts: HostProcess[] = [];
  const streams: SseClient[] = [];
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    for (const host of hosts.splice(0)) {
      host.kill('SIGKILL');
      await host.exited;
    }
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function start(args: string[], port?: string): Promise<HostProcess> {
    const host = await spawnHost([...args, ...(port ? ['--port', port] : [])]);
    hosts.push(host);
    return host;
  }

  async function kill(host: HostProcess): Promise<void> {
    host.kill('SIGKILL');
    await host.exited;
    hosts.splice(hosts.indexOf(host), 1);
  }

  async function stream(url: string, sessionId: string, lastEventId?: number): Promise<SseClient> {
    const client = await SseClient.connect(`${url}/sessions/${sessionId}/events`, lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) });
    streams.push(client);
    return client;
  }

  const textOf = (updates: Envelope[]) => updates.flatMap((u) => (u.update.type === 'text_delta' ? [u.update.text as string] : [])).join('');

  it('an event stream resumed with an id of the dead process gets snapshot_required, then every update issued since the restart', async () => {
    const db = sqliteFile();
    cleanup.push(() => db.drop());
    const workspace = await tempDir();
    const scripts = { first: path.join(workspace, 'first.json'), second: path.join(workspace, 'second.json') };
    await writeFile(scripts.first, JSON.stringify([{ text: 'before the crash' }]));
    await writeFile(scripts.second, JSON.stringify([{ text: 'after the restart, all of it' }]));
    const common = ['--db', db.file, '--workspace', workspace];
    const first = await start([...common, '--model', `scripted:${scripts.first}`]);
    const port = new URL(first.url).port;

    const sessionId = (await call(first.url, 'POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
    const before = await stream(first.url, sessionId);
    expect((await call(first.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'one' }] })).status).toBe(202);
    await before.nextUpdate('turn_finished');
    const lastSeen = before.updates.at(-1)!.sequence;

    await kill(first);
    await before.ended;
    const second = await start([...common, '--model', `scripted:${scripts.second}`], port);
    expect(second.url).toBe(first.url);
    // The next turn runs, and ends, before the client is back.
    const accepted = await call(second.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r2', input: [{ type: 'text', text: 'two' }] });
    expect(accepted.status).toBe(202);
    expect((await call(second.url, 'GET', `/sessions/${sessionId}/turns/${accepted.body.turnId as string}?wait=30`)).body).toMatchObject({ status: 'completed' });

    const after = await stream(second.url, sessionId, lastSeen);
    const restart = await after.next(() => true);
    expect(restart.event).toBe('snapshot_required');
    const snapshot = JSON.parse(restart.data) as { lastUpdateSequence: number; runtime: { kind: string } };
    // The skipped block: the restarted process numbers above what the dead one reserved.
    expect(snapshot.lastUpdateSequence).toBeGreaterThan(lastSeen + 1);
    expect(Number(restart.id)).toBe(snapshot.lastUpdateSequence);
    // The session as the restarted process opened it, before the turn it has run since.
    expect(snapshot.runtime).toEqual({ kind: 'idle' });
    const finished = await after.nextUpdate('turn_finished');
    expect(finished).toMatchObject({ turnId: accepted.body.turnId, update: { outcome: { status: 'completed', finalText: 'after the restart, all of it' } } });
    expect(after.updates.find((u) => u.update.type !== 'queue_updated')?.update).toMatchObject({ type: 'turn_started', clientRequestId: 'r2' });
    expect(textOf(after.updates)).toBe('after the restart, all of it');
    // Gap-free from the snapshot on, and nothing the first connection had.
    expect(sequencesOf(after.updates)).toEqual(run(snapshot.lastUpdateSequence + 1, after.updates.length));
    const seen = new Set(sequencesOf(before.updates));
    expect(after.updates.filter((u) => seen.has(u.sequence))).toEqual([]);
  });

  describe('a turn under way when the host died goes on under the same turn id', () => {
    let server: FakeOpenAiServer | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    /**
     * The provider outlives the host: its first answer stops after a few words and hangs (the host is
     * killed there, streaming), its second — the resumed turn's model call — answers in full.
     */
    async function killedMidStream(until?: Promise<unknown>): Promise<{ url: string; sessionId: string; common: string[]; port: string; first: HostProcess }> {
      server = await startFakeOpenAiServer([
        { chunks: sse.reply({ text: 'Looking into it' }).slice(0, -1), stall: true },
        { chunks: sse.reply({ text: 'All done after the restart.' }), ...(until && { until }) },
      ]);
      const db = sqliteFile();
      cleanup.push(() => db.drop());
      const workspace = await tempDir();
      const common = ['--db', db.file, '--workspace', workspace, '--model', `openai-compatible:${server.baseUrl}#fake-model`];
      const first = await start(common);
      const sessionId = (await call(first.url, 'POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
      return { url: first.url, sessionId, common, port: new URL(first.url).port, first };
    }

    it('an event stream resumed with its last id gets snapshot_required showing the turn running, then turn_resumed and the rest of the turn, once', async () => {
      const { url, sessionId, common, port, first } = await killedMidStream();
      const before = await stream(url, sessionId);
      const accepted = await call(url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'look into it' }] });
      const turnId = accepted.body.turnId as string;
      await before.nextUpdate('text_delta', 0, 3);
      const lastSeen = before.updates.at(-1)!.sequence;

      await kill(first);
      await before.ended;
      const second = await start(common, port);
      // The turn goes on by itself, and ends, while the client is away.
      expect((await call(second.url, 'GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`)).body).toMatchObject({ status: 'completed' });

      const after = await stream(second.url, sessionId, lastSeen);
      const restart = await after.next(() => true);
      expect(restart.event).toBe('snapshot_required');
      const snapshot = JSON.parse(restart.data) as { lastUpdateSequence: number; runtime: { kind: string; turnId?: string; draftText?: string } };
      expect(snapshot.lastUpdateSequence).toBeGreaterThan(lastSeen);
      expect(snapshot.runtime).toMatchObject({ kind: 'running', turnId, draftText: '' });
      const finished = await after.nextUpdate('turn_finished');
      expect(finished.update).toMatchObject({ outcome: { status: 'completed', finalText: 'All done after the restart.' } });
      const resumed = after.updates.find((u) => u.update.type === 'turn_resumed');
      expect(resumed).toMatchObject({ turnId, update: { clientRequestId: 'r1', reason: 'host_restarted' } });
      expect(after.updates.every((u) => u.turnId === turnId || u.update.type === 'queue_updated')).toBe(true);
      expect(textOf(after.updates)).toBe('All done after the restart.');
      expect(sequencesOf(after.updates)).toEqual(run(snapshot.lastUpdateSequence + 1, after.updates.length));
      const seen = new Set(sequencesOf(before.updates));
      expect(after.updates.filter((u) => seen.has(u.sequence))).toEqual([]);
      expect(server!.requests).toHaveLength(2);
    });

    it('a useChat resume (GET /api/chat/:id/stream) gets the same turn, its answer once, and its end', async () => {
      // The resumed model call answers only once the page has reconnected: the resume then finds the turn running.
      let reconnected: () => void = () => undefined;
      const answer = new Promise<void>((resolve) => (reconnected = resolve));
      const { url, common, port, first } = await killedMidStream(answer);
      const chatId = 'chat-after-crash';
      const client = new UiChatClient(url, chatId);
      // The response is cut by the kill; what it had is what the page showed.
      const response = await client.send([userMessage('u1', 'look into it')]);
      const reader = response.getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        if (chunk.value.type === 'text-delta') break;
      }
      await kill(first);
      await reader.cancel().catch(() => undefined);
      await start(common, port);

      const resumed = await client.reconnect();
      reconnected();
      expect(resumed).not.toBeNull();
      const { message, types, errors } = await fold(resumed!);
      expect(errors).toEqual([]);
      expect(types[0]).toBe('start');
      expect(types.at(-1)).toBe('finish');
      expect(texts(message)).toEqual(['All done after the restart.']);
      expect(server!.requests).toHaveLength(2);
    });
  });
});
