import { afterEach, describe, expect, it } from 'vitest';
import { startHost } from '../../src/host/host.js';
import { SnapshotSchema } from '../../src/host/schemas.js';
import { scriptedModel, sqliteStorage } from '../../src/index.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { call, finished, newSession, postTurn, testHost, type TestHost } from '../support/host.js';

const sqlite = durableTargets[0]!;

describe('the HTTP surface: validation, errors, OpenAPI, security defaults', () => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });
  const open = async (options: Parameters<typeof testHost>[2] = {}) => {
    db = sqlite.create();
    host = await testHost(db, [{ text: 'hi' }], options);
    return host;
  };

  it('lists every route in the OpenAPI 3.1 document it serves', async () => {
    const h = await open();
    const doc = await h.call('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    const routes = Object.entries(doc.body.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(routes.sort()).toEqual(
      [
        'GET /healthz',
        'GET /metrics',
        'GET /agents',
        'POST /sessions',
        'GET /sessions',
        'GET /sessions/{sessionId}',
        'POST /sessions/{sessionId}/turns',
        'POST /sessions/{sessionId}/messages',
        'GET /sessions/{sessionId}/runs',
        'GET /runs/{runId}',
        'GET /runs/{runId}/events',
        'GET /sessions/{sessionId}/turns/{turnId}',
        'POST /sessions/{sessionId}/turns/{turnId}/cancel',
        'POST /sessions/{sessionId}/turns/{turnId}/permissions/{toolCallId}',
        'PUT /sessions/{sessionId}/permission-mode',
        'PUT /sessions/{sessionId}/agent',
        'POST /sessions/{sessionId}/agent-messages',
        'POST /sessions/{sessionId}/compact',
        'POST /sessions/{sessionId}/rewind',
        'GET /sessions/{sessionId}/messages',
        'GET /sessions/{sessionId}/context',
        'GET /sessions/{sessionId}/audit',
        'GET /sessions/{sessionId}/events',
        'POST /api/chat',
        'GET /api/chat/{id}/stream',
      ].sort(),
    );
  });

  it('answers bad input with a typed 400, unknown ids with 404, and never a stack trace', async () => {
    const h = await open();
    const id = await newSession(h);
    const cases: [string, string, unknown, number, string][] = [
      ['POST', '/sessions', { permissionMode: 'yolo' }, 400, 'InvalidInput'],
      ['POST', '/sessions', { workspaceDir: '/etc' }, 400, 'InvalidInput'],
      ['POST', '/sessions', { agent: 'constructor' }, 400, 'UnknownAgent'],
      ['POST', `/sessions/${id}/turns`, { clientRequestId: 'x' }, 400, 'InvalidInput'],
      ['POST', `/sessions/${id}/turns`, '{"clientRequestId": "x", "input": [', 400, 'InvalidInput'],
      ['POST', `/sessions/${id}/turns`, { clientRequestId: 'a\u0000b', input: [{ type: 'text', text: 'x' }] }, 400, 'InvalidInput'],
      ['POST', `/sessions/${id}/turns`, { clientRequestId: 'e', input: [{ type: 'text', text: '   ' }] }, 400, 'EmptyInput'],
      ['GET', `/sessions/${id}/turns/t?wait=61`, undefined, 400, 'InvalidInput'],
      ['GET', '/sessions?limit=0', undefined, 400, 'InvalidInput'],
      ['GET', '/sessions?cursor=bogus', undefined, 400, 'InvalidCursor'],
      ['GET', '/sessions/ses_nope', undefined, 404, 'UnknownSession'],
      ['GET', '/sessions/ses_nope/messages', undefined, 404, 'UnknownSession'],
      ['POST', '/sessions/ses_nope/turns', { clientRequestId: 'x', input: [{ type: 'text', text: 'x' }] }, 404, 'UnknownSession'],
      ['GET', `/sessions/${id}/turns/turn_nope`, undefined, 404, 'UnknownTurn'],
      ['POST', '/sessions/ses_nope/messages', { clientRequestId: 'x', input: [{ type: 'text', text: 'x' }] }, 404, 'UnknownSession'],
      ['GET', `/sessions/${id}/runs?cursor=bogus`, undefined, 400, 'InvalidCursor'],
      ['GET', '/sessions/ses_nope/runs', undefined, 404, 'UnknownSession'],
      ['GET', '/runs/run_nope', undefined, 404, 'UnknownRun'],
      ['POST', `/sessions/${id}/turns/turn_nope/cancel`, undefined, 409, 'TurnNotActive'],
      ['POST', `/sessions/${id}/turns/turn_nope/permissions/c`, { decision: 'allow_once' }, 409, 'TurnNotActive'],
      ['POST', `/sessions/${id}/rewind`, { compactionId: 'cmp_nope' }, 404, 'UnknownCompaction'],
      ['POST', `/sessions/${id}/compact`, undefined, 409, 'NothingToCompact'],
      ['GET', '/nowhere', undefined, 404, 'NotFound'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const answer = await h.call(method, path, body);
      expect({ method, path, status: answer.status, code: (answer.body.error as { code?: string } | undefined)?.code }).toEqual({ method, path, status, code });
      expect(JSON.stringify(answer.body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
    // The session still works after all of that.
    const turn = await postTurn(h, id, 'ok');
    expect(await finished(h, id, turn.body.turnId as string)).toMatchObject({ status: 'completed' });
  });

  it('refuses bodies over 1 MiB with 413', async () => {
    const h = await open();
    const id = await newSession(h);
    const big = await h.call('POST', `/sessions/${id}/turns`, { clientRequestId: 'big', input: [{ type: 'text', text: 'x'.repeat(1024 * 1024 + 10) }] });
    expect(big).toMatchObject({ status: 413, body: { error: { code: 'PayloadTooLarge' } } });
    expect(await h.storage.listTurns(id)).toEqual([]);
  });

  it('pages sessions newest first with a cursor, each with its live status', async () => {
    const h = await open();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await newSession(h));
    const first = await h.call('GET', '/sessions?limit=2');
    const second = await h.call('GET', `/sessions?limit=2&cursor=${first.body.nextCursor as string}`);
    const third = await h.call('GET', `/sessions?limit=2&cursor=${second.body.nextCursor as string}`);
    const listed = [first, second, third].flatMap((page) => (page.body.sessions as { sessionId: string }[]).map((s) => s.sessionId));
    expect(new Set(listed)).toEqual(new Set(ids));
    expect(third.body.nextCursor).toBeNull();
    expect((first.body.sessions as { status: string }[])[0]).toMatchObject({ status: 'idle', lastOutcome: null, busyPolicy: 'reject' });
  });

  it('serves the stored conversation in pages and the context window', async () => {
    const h = await open();
    const id = await newSession(h);
    const turn = await postTurn(h, id, 'r', 'hello there');
    await finished(h, id, turn.body.turnId as string);
    const page1 = await h.call('GET', `/sessions/${id}/messages?limit=1`);
    expect(page1.body.messages).toHaveLength(1);
    const rest = await h.call('GET', `/sessions/${id}/messages?after=${page1.body.nextAfter as number}`);
    const all = [...(page1.body.messages as { message: { role: string; text?: string } }[]), ...(rest.body.messages as { message: { role: string; text?: string } }[])];
    expect(all.map((m) => m.message.role)).toContain('assistant');
    expect(all.some((m) => m.message.text === 'hello there')).toBe(true);
    const context = await h.call('GET', `/sessions/${id}/context`);
    expect(context.status).toBe(200);
    expect(context.body).toMatchObject({ budget: { estimatedInputTokens: expect.any(Number) }, percentUsed: expect.any(Number) });
  });

  it("serves a session's snapshot as its schema says, with the sandbox its commands run in", async () => {
    const h = await open({ sandbox: 'off' });
    const id = await newSession(h);
    const snapshot = await h.call('GET', `/sessions/${id}`);
    expect(snapshot.status).toBe(200);
    expect(SnapshotSchema.parse(snapshot.body)).toEqual(snapshot.body);
    expect(snapshot.body).toMatchObject({ version: 8, sessionId: id, runtime: { kind: 'idle' }, sandbox: { kind: 'none', reason: 'the operator turned the sandbox off' } });
  });

  it('requires the bearer token on every route but /healthz when one is set', async () => {
    const h = await open({ token: 's3cret' });
    expect((await h.call('GET', '/healthz')).status).toBe(200);
    expect(await h.call('GET', '/sessions')).toMatchObject({ status: 401, body: { error: { code: 'Unauthorized' } } });
    expect((await h.call('GET', '/sessions', undefined, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await h.call('GET', '/openapi.json')).status).toBe(401);
    expect((await h.call('GET', '/sessions', undefined, { authorization: 'Bearer s3cret' })).status).toBe(200);
  });

  it('refuses to listen beyond loopback without a token, and does with one', async () => {
    const base = { port: 0, workspace: '.', idleTtlSeconds: 1, model: scriptedModel([]) };
    await expect(startHost({ ...base, host: '0.0.0.0', storage: sqliteStorage({ filename: ':memory:' }) })).rejects.toMatchObject({ code: 'InsecureBinding' });
    const open = await startHost({ ...base, host: '0.0.0.0', token: 't', storage: sqliteStorage({ filename: ':memory:' }) });
    try {
      const port = new URL(open.url).port;
      expect((await call(`http://127.0.0.1:${port}`, 'GET', '/sessions')).status).toBe(401);
      expect((await call(`http://127.0.0.1:${port}`, 'GET', '/sessions', undefined, { authorization: 'Bearer t' })).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it('sends CORS headers only for the origin it was given', async () => {
    const h = await open({ corsOrigin: 'https://app.example' });
    const allowed = await fetch(`${h.url}/sessions`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const plain = await open2();
    const none = await fetch(`${plain.url}/sessions`, { headers: { origin: 'https://app.example' } });
    expect(none.headers.get('access-control-allow-origin')).toBeNull();
    await plain.close();
  });
});

async function open2() {
  return startHost({ host: '127.0.0.1', port: 0, workspace: '.', idleTtlSeconds: 1, model: scriptedModel([]), storage: sqliteStorage({ filename: ':memory:' }) });
}
