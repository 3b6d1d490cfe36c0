import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StreamHello, StreamItem, SessionListEntry } from '../../src/inspect/stream-protocol.js';
import { sqliteFile } from '../support/databases.js';
import { testHost, type TestHost } from '../support/host.js';
import { SseClient } from '../support/sse-client.js';
import { routedModel } from '../support/routed-model.js';
import { CRASH_AGENTS, LEAD_PROMPT, WORKER_PROMPT } from '../support/subagent-agents.js';

const TOKEN = 'inspector-secret';
const auth = { authorization: `Bearer ${TOKEN}` };
let host: TestHost | undefined;
let assets: string;
const clients: SseClient[] = [];

beforeAll(async () => {
  // A stand-in build: these tests are about the routes, the browser test serves the real one.
  assets = await mkdtemp(path.join(os.tmpdir(), 'turnchart-assets-'));
  await mkdir(path.join(assets, 'assets'));
  await writeFile(path.join(assets, 'index.html'), '<!doctype html><script type="module" src="/inspect/assets/app-1.js"></script>');
  await writeFile(path.join(assets, 'assets', 'app-1.js'), 'console.log(1)');
});
afterAll(() => rm(assets, { recursive: true, force: true }));
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await host?.close();
  host = undefined;
});

async function connect(route: string, headers: Record<string, string> = auth): Promise<SseClient> {
  const client = await SseClient.connect(host!.url + route, headers);
  clients.push(client);
  return client;
}

const approval = [{ text: 'w', toolCalls: [{ name: 'write_file', args: { path: 'note.md', content: 'hi', token: 'abc' } }] }, { text: 'done' }];

describe('inspector routes', () => {
  it('serves the page and its assets without the token, and every piece of data only with it', async () => {
    host = await testHost(sqliteFile(), approval, { token: TOKEN, inspectorAssets: assets });
    const page = await fetch(`${host.url}/inspect?session=ses_x`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await page.text()).toContain('/inspect/assets/app-1.js');
    expect((await fetch(`${host.url}/inspect/assets/app-1.js`)).headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${host.url}/inspect/assets/..%2Fapp-1.js`)).status).toBe(404);
    for (const route of ['/inspect/api/charts', '/inspect/api/sessions', '/inspect/api/sessions/ses_x/stream']) {
      expect((await host.call('GET', route)).status, route).toBe(401);
    }
    const charts = await host.call('GET', '/inspect/api/charts', undefined, auth);
    expect(charts.status).toBe(200);
    const ids = (charts.body.charts as { machineId: string; nodes: { id: string }[] }[]).map((c) => c.machineId);
    expect(ids).toEqual(['session', 'turn', 'toolCall', 'stallWatchdog']);
  });

  it('answers 503 with a typed error when the page is not built', async () => {
    host = await testHost(sqliteFile(), approval, { inspectorAssets: path.join(assets, 'missing') });
    const page = await host.call('GET', '/inspect');
    expect(page.status).toBe(503);
    expect(page.body).toMatchObject({ error: { code: 'InspectorNotBuilt' } });
  });

  it('lists sessions with live status, and streams a session: hello with the present, then machine events and updates, resumable', async () => {
    host = await testHost(sqliteFile(), approval, { token: TOKEN, inspectorAssets: assets });
    const created = await host.call('POST', '/sessions', { permissionMode: 'ask' }, auth);
    const sessionId = created.body.sessionId as string;
    const list = await connect('/inspect/api/sessions');
    const first = await list.next((e) => e.event === 'list');
    expect((JSON.parse(first.data) as { sessions: SessionListEntry[] }).sessions).toEqual([expect.objectContaining({ sessionId, status: 'idle', open: true })]);

    const stream = await connect(`/inspect/api/sessions/${sessionId}/stream`);
    const hello = JSON.parse((await stream.next((e) => e.event === 'hello')).data) as StreamHello;
    expect(hello.actors[0]!.state.states).toEqual(['session', 'session.idle']);
    const turn = await host.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'write' }] }, auth);
    expect(turn.status).toBe(202);
    const waiting = await stream.next((e) => e.data.includes('"turn.running_tools.tool_call.waiting_permission"'));
    expect(Number(waiting.id)).toBeGreaterThan(hello.cursor);
    const status = await list.next((e) => e.event === 'message' && (JSON.parse(e.data) as SessionListEntry).status === 'waiting_permission');
    expect(JSON.parse(status.data)).toMatchObject({ sessionId, status: 'waiting_permission' });
    expect(stream.events.map((e) => e.data).join('\n')).not.toContain('"abc"');

    // A page that reconnects with Last-Event-ID gets only what came after it.
    const resumed = await connect(`/inspect/api/sessions/${sessionId}/stream`, { ...auth, 'last-event-id': waiting.id! });
    const again = JSON.parse((await resumed.next((e) => e.event === 'hello')).data) as StreamHello;
    expect(again.reset).toBe(false);
    const snapshot = (await host.call('GET', `/sessions/${sessionId}`, undefined, auth)).body as { runtime: { pendingApproval: { toolCallId: string } } };
    const turnId = turn.body.turnId as string;
    await host.call('POST', `/sessions/${sessionId}/turns/${turnId}/permissions/${snapshot.runtime.pendingApproval.toolCallId}`, { decision: 'allow_once' }, auth);
    const finished = await resumed.next((e) => e.data.includes('"turn_finished"'));
    const items = resumed.events.filter((e) => e.event === 'message' && e.id !== null).map((e) => JSON.parse(e.data) as StreamItem);
    expect(items.every((i) => i.cursor > Number(waiting.id))).toBe(true);
    expect(JSON.parse(finished.data)).toMatchObject({ kind: 'update', envelope: { update: { type: 'turn_finished', outcome: { status: 'completed' } } } });
    await list.next((e) => e.event === 'message' && (JSON.parse(e.data) as SessionListEntry).lastOutcome === 'completed');
  });

  it('refuses a malformed session id or resume point with a typed 4xx', async () => {
    host = await testHost(sqliteFile(), approval, { inspectorAssets: assets });
    expect((await host.call('GET', '/inspect/api/sessions/ses_nope/stream')).body).toMatchObject({ error: { code: 'UnknownSession' } });
    expect((await host.call('GET', '/inspect/api/sessions/x/stream?after=-1')).status).toBe(400);
    expect((await host.call('GET', '/inspect/api/sessions/x/stream?junk=1')).status).toBe(400);
  });

  it('lists a session\'s sub-agent children and a child\'s parent, behind the token', async () => {
    const { port } = routedModel({
      lead: { prompt: LEAD_PROMPT, steps: [{ text: 'delegating', toolCalls: [{ id: 'spawn-1', name: 'spawn_agent', args: { agent: 'worker', task: 'say hi' } }] }, { text: 'done' }] },
      worker: { prompt: WORKER_PROMPT, steps: [{ text: 'hi' }] },
    });
    host = await testHost(sqliteFile(), port, { token: TOKEN, inspectorAssets: assets, runtime: { agents: CRASH_AGENTS } });
    const parent = await host.runtime.createSession({ agent: 'lead', permissionMode: 'ask' });
    expect((await host.call('GET', `/inspect/api/sessions/${parent.id}/links`)).status).toBe(401);
    const empty = await host.call('GET', `/inspect/api/sessions/${parent.id}/links`, undefined, auth);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ parent: null, children: [] });

    const started = await parent.startTurn({ clientRequestId: 'links-1', input: [{ type: 'text', text: 'delegate' }] });
    expect(started.ok).toBe(true);
    let links = empty.body as { parent: unknown; children: { sessionId: string; agent: string }[] };
    for (let i = 0; i < 200 && links.children.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      links = (await host.call('GET', `/inspect/api/sessions/${parent.id}/links`, undefined, auth)).body as typeof links;
    }
    expect(links).toEqual({ parent: null, children: [{ sessionId: expect.any(String), agent: 'worker' }] });
    const childId = links.children[0]!.sessionId;
    expect((await host.call('GET', `/inspect/api/sessions/${childId}/links`, undefined, auth)).body).toEqual({ parent: { sessionId: parent.id }, children: [] });

    expect((await host.call('GET', `/inspect/api/sessions/${'x'.repeat(201)}/links`, undefined, auth)).status).toBe(400);
    expect((await host.call('GET', '/inspect/api/sessions/ses_nope/links', undefined, auth)).body).toMatchObject({ error: { code: 'UnknownSession' } });
  });
});
