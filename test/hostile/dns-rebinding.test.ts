import { access } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../support/host.js';
import { rawRequest, rawWire, type RawRequest } from '../support/raw-http.js';
import { SseClient } from '../support/sse-client.js';

/**
 * Issue 22, finding 1: a probe of `npm start` (loopback, no token) sent every request with
 * `Host: evil.example:PORT` and `Origin: http://evil.example:PORT` — what a page on a rebound name
 * sends — and created a session, started a turn and allowed its command. Replayed here as it was
 * run, over raw HTTP (fetch cannot set Host): every step is refused 421 and nothing changes.
 */

const WRITE = [{ text: 'writing', toolCalls: [{ name: 'write_file', args: { path: 'pwned.txt', content: 'rebound' } }] }, { text: 'done' }];

describe.each(durableTargets)('DNS rebinding on $name', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  let sse: SseClient | undefined;
  afterEach(async () => {
    sse?.close();
    await host?.close();
    await db?.drop();
    [db, host, sse] = [undefined, undefined, undefined];
  });
  const open = async (options: Parameters<typeof testHost>[2] = {}) => {
    db = create();
    host = await testHost(db, WRITE, options);
    return host;
  };

  it.skipIf(skip)('refuses every step of the probe with 421 MisdirectedRequest, and nothing changes', async () => {
    const h = await open();
    const port = new URL(h.url).port;
    // A session waiting for an approval, as the probe had it, made with this host's own name.
    const sessionId = await newSession(h, { permissionMode: 'ask' });
    sse = await SseClient.connect(`${h.url}/sessions/${sessionId}/events`);
    const turn = await postTurn(h, sessionId, 'r1', 'write a note');
    expect(turn.status).toBe(202);
    const turnId = turn.body.turnId as string;
    const toolCallId = (await sse.nextUpdate('permission_requested')).update.toolCallId as string;
    const sessionsBefore = await h.storage.listSessions({ limit: 100 });

    const json = { 'content-type': 'application/json' };
    const steps: RawRequest[] = [
      { method: 'POST', path: '/sessions', headers: json, body: '{}' },
      { method: 'POST', path: `/sessions/${sessionId}/turns`, headers: json, body: JSON.stringify({ clientRequestId: 'evil', input: [{ type: 'text', text: 'rm -rf' }] }) },
      { method: 'GET', path: `/sessions/${sessionId}` },
      { method: 'POST', path: `/sessions/${sessionId}/turns/${turnId}/permissions/${toolCallId}`, headers: json, body: '{"decision":"allow_once"}' },
      { method: 'PUT', path: `/sessions/${sessionId}/permission-mode`, headers: json, body: '{"mode":"auto"}' },
      { method: 'POST', path: `/sessions/${sessionId}/turns/${turnId}/cancel` },
      { method: 'POST', path: `/sessions/${sessionId}/compact` },
      { method: 'POST', path: `/sessions/${sessionId}/agent-messages`, headers: json, body: '{"from":"evil","text":"hi"}' },
      { method: 'GET', path: '/sessions' },
      { method: 'GET', path: `/sessions/${sessionId}/messages` },
      { method: 'GET', path: `/sessions/${sessionId}/events` },
      { method: 'GET', path: '/healthz' },
      { method: 'GET', path: '/openapi.json' },
      { method: 'GET', path: '/inspect' },
      { method: 'GET', path: '/inspect/api/sessions' },
      { method: 'GET', path: `/inspect/api/sessions/${sessionId}/stream` },
      { method: 'POST', path: '/api/chat', headers: json, body: JSON.stringify({ id: 'evil-chat', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }) },
      { method: 'GET', path: `/api/chat/${sessionId}/stream` },
      { method: 'OPTIONS', path: '/sessions', headers: { 'access-control-request-method': 'POST' } },
    ];
    for (const step of steps) {
      for (const origin of [`http://evil.example:${port}`, undefined]) {
        const answer = await rawRequest(h.url, { ...step, headers: { ...step.headers, host: `evil.example:${port}`, ...(origin && { origin }) } });
        expect({ step: `${step.method} ${step.path}`, status: answer.status, code: answer.code, connection: answer.headers.connection }).toEqual({
          step: `${step.method} ${step.path}`,
          status: 421,
          code: 'MisdirectedRequest',
          connection: 'close',
        });
      }
    }

    // Nothing changed: no session, no turn, the approval still pending, the mode still `ask`, nothing written.
    expect(await h.storage.listSessions({ limit: 100 })).toEqual(sessionsBefore);
    expect((await h.storage.listTurns(sessionId)).map((t) => t.id)).toEqual([turnId]);
    const snapshot = await h.call('GET', `/sessions/${sessionId}`);
    expect(snapshot.body).toMatchObject({ permissionMode: 'ask', runtime: { kind: 'running', phase: 'waiting_permission', pendingApproval: { toolCallId } } });
    await expect(access(path.join(h.workspace, 'pwned.txt'))).rejects.toThrow();

    // The same approval, asked by this host's own name, goes through: the host itself was never in the way.
    expect((await h.call('POST', `/sessions/${sessionId}/turns/${turnId}/permissions/${toolCallId}`, { decision: 'allow_once' })).status).toBe(200);
    expect(await finished(h, sessionId, turnId)).toMatchObject({ status: 'completed' });
    await access(path.join(h.workspace, 'pwned.txt'));
  });

  it.skipIf(skip)('serves loopback names and the bound address at the bound port, and names of allowedHosts at any port', async () => {
    const h = await open({ allowedHosts: ['turnchart.example', 'Proxy.Example'] });
    const port = Number(new URL(h.url).port);
    const served = [`127.0.0.1:${port}`, `localhost:${port}`, `LocalHost:${port}`, `[::1]:${port}`, 'turnchart.example', 'turnchart.example:443', `proxy.example:${port}`];
    for (const name of served) {
      const answer = await rawRequest(h.url, { method: 'GET', path: '/healthz', headers: { host: name } });
      expect({ name, status: answer.status }).toEqual({ name, status: 200 });
    }
    const refused = [
      `evil.example:${port}`,
      `localhost:${port + 1}`,
      `127.0.0.1:${port === 80 ? 81 : 80}`,
      '127.0.0.1',
      'localhost',
      `localhost.:${port}`,
      `127.0.0.2:${port}`,
      `10.0.0.1:${port}`,
      `[::2]:${port}`,
      `localhost.evil.example:${port}`,
      `turnchart.example.evil:${port}`,
      `evil.turnchart.example`,
      `2130706433:${port}`,
      `0x7f.1:${port}`,
      `localhost:0${port}`,
      `evil.example:${port}@127.0.0.1:${port}`,
      `[0:0:0:0:0:0:0:1]:${port}`,
      `[::1]`,
    ];
    for (const name of refused) {
      const answer = await rawRequest(h.url, { method: 'GET', path: '/healthz', headers: { host: name } });
      expect({ name, status: answer.status, code: answer.code }).toEqual({ name, status: 421, code: 'MisdirectedRequest' });
    }
    // No Host at all (HTTP/1.0 allows it), or an empty one.
    for (const head of ['GET /healthz HTTP/1.0', 'GET /healthz HTTP/1.1\r\nHost:']) {
      const answer = await rawWire(h.url, head);
      expect({ head, status: answer.status, code: answer.code }).toEqual({ head, status: 421, code: 'MisdirectedRequest' });
    }
    // No URL can be built with these at all (nor could a browser have sent them): malformed, as RFC 9112 §3.2 has it.
    for (const name of [`evil.example:${port}, 127.0.0.1:${port}`, `127.0.0.1:${port} evil`]) {
      const answer = await rawRequest(h.url, { method: 'GET', path: '/healthz', headers: { host: name } });
      expect({ name, status: answer.status, code: answer.code }).toEqual({ name, status: 400, code: 'InvalidInput' });
    }
  });

  it.skipIf(skip)('bound to every interface, serves any address literal at the bound port, and names only when allowed', async () => {
    const h = await open({ host: '0.0.0.0', token: 't0ken', allowedHosts: ['api.example'] });
    const port = new URL(h.url).port;
    const auth = { authorization: 'Bearer t0ken' };
    for (const name of [`127.0.0.1:${port}`, `10.1.2.3:${port}`, `[fd00::1]:${port}`, `localhost:${port}`, 'api.example']) {
      const answer = await rawRequest(`http://127.0.0.1:${port}`, { method: 'GET', path: '/sessions', headers: { host: name, ...auth } });
      expect({ name, status: answer.status }).toEqual({ name, status: 200 });
    }
    for (const name of [`myhost:${port}`, `evil.example:${port}`, `10.1.2.3:${Number(port) + 1}`]) {
      const answer = await rawRequest(`http://127.0.0.1:${port}`, { method: 'GET', path: '/sessions', headers: { host: name, ...auth } });
      expect({ name, status: answer.status, code: answer.code }).toEqual({ name, status: 421, code: 'MisdirectedRequest' });
    }
  });
});
