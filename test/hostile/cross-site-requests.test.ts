import { afterEach, describe, expect, it } from 'vitest';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../support/host.js';
import { rawRequest, type RawRequest } from '../support/raw-http.js';

/**
 * Issue 22, finding 1, the other half: a page of any origin can send a form or a "simple" fetch
 * (`text/plain`, no preflight) to this host under its own right name. A command carrying a
 * foreign `Origin` is refused 403, a body that is not JSON 415, a body on a command that takes
 * none 415 — and nothing changes. Reads stay open to any origin (CORS governs what a page reads).
 */

const json = { 'content-type': 'application/json' };

describe.each(durableTargets)('cross-site requests on $name', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    [db, host] = [undefined, undefined];
  });
  const open = async (options: Parameters<typeof testHost>[2] = {}) => {
    db = create();
    host = await testHost(db, [{ text: 'one' }, { text: 'two' }, { text: 'three' }, { text: 'four' }], options);
    return host;
  };

  /** A session with one finished turn: something to compact, and a turn id to cancel. */
  async function sessionWithTurn(h: TestHost): Promise<{ sessionId: string; turnId: string }> {
    const sessionId = await newSession(h, { permissionMode: 'ask' });
    const turn = await postTurn(h, sessionId, 'r1');
    await finished(h, sessionId, turn.body.turnId as string);
    return { sessionId, turnId: turn.body.turnId as string };
  }

  it.skipIf(skip)('refuses every command with a foreign Origin or Origin: null, and serves reads whatever the Origin', async () => {
    const h = await open();
    const { sessionId, turnId } = await sessionWithTurn(h);
    const commands: RawRequest[] = [
      { method: 'POST', path: '/sessions', headers: json, body: '{}' },
      { method: 'POST', path: `/sessions/${sessionId}/turns`, headers: json, body: JSON.stringify({ clientRequestId: 'csrf', input: [{ type: 'text', text: 'hi' }] }) },
      { method: 'POST', path: `/sessions/${sessionId}/turns/${turnId}/permissions/call_x`, headers: json, body: '{"decision":"allow_once"}' },
      { method: 'PUT', path: `/sessions/${sessionId}/permission-mode`, headers: json, body: '{"mode":"auto"}' },
      { method: 'PUT', path: `/sessions/${sessionId}/agent`, headers: json, body: '{"agent":"default"}' },
      { method: 'POST', path: `/sessions/${sessionId}/turns/${turnId}/cancel` },
      { method: 'POST', path: `/sessions/${sessionId}/compact` },
      { method: 'POST', path: `/sessions/${sessionId}/rewind`, headers: json, body: '{"compactionId":"cmp_x"}' },
      { method: 'POST', path: `/sessions/${sessionId}/agent-messages`, headers: json, body: '{"from":"evil","text":"hi"}' },
      { method: 'POST', path: '/api/chat', headers: json, body: JSON.stringify({ id: 'csrf-chat', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }) },
      { method: 'DELETE', path: `/sessions/${sessionId}` },
      { method: 'PATCH', path: `/sessions/${sessionId}` },
    ];
    const sessionsBefore = await h.storage.listSessions({ limit: 100 });
    const port = new URL(h.url).port;
    const foreign = ['https://evil.example', 'null', `http://evil.example:${port}`, `https://127.0.0.1.evil.example:${port}`, `http://localhost:${Number(port) + 1}`, `http://127.0.0.1:${port}/`, 'file://', ''];
    for (const command of commands) {
      for (const origin of foreign) {
        const answer = await rawRequest(h.url, { ...command, headers: { ...command.headers, origin } });
        expect({ command: `${command.method} ${command.path}`, origin, status: answer.status, code: answer.code }).toEqual({
          command: `${command.method} ${command.path}`,
          origin,
          status: 403,
          code: 'ForbiddenOrigin',
        });
      }
    }
    expect(await h.storage.listSessions({ limit: 100 })).toEqual(sessionsBefore);
    expect(await h.storage.listTurns(sessionId)).toHaveLength(1);
    expect((await h.call('GET', `/sessions/${sessionId}`)).body).toMatchObject({ permissionMode: 'ask' });

    for (const path of ['/sessions', `/sessions/${sessionId}`, `/sessions/${sessionId}/messages`, '/healthz', '/openapi.json']) {
      const answer = await rawRequest(h.url, { method: 'GET', path, headers: { origin: 'https://evil.example' } });
      expect({ path, status: answer.status }).toEqual({ path, status: 200 });
    }
  });

  it.skipIf(skip)("accepts commands from the host's own origin, as its inspector page sends them, and from the --cors-origin", async () => {
    const h = await open({ corsOrigin: 'https://app.example' });
    const { sessionId, turnId } = await sessionWithTurn(h);
    const port = new URL(h.url).port;
    const own = [
      { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` },
      { host: `localhost:${port}`, origin: `http://localhost:${port}` },
      { host: `[::1]:${port}`, origin: `http://[::1]:${port}` },
      { host: `127.0.0.1:${port}`, origin: 'https://app.example' },
    ];
    for (const headers of own) {
      const created = await rawRequest(h.url, { method: 'POST', path: '/sessions', headers: { ...headers, ...json }, body: '{}' });
      expect({ ...headers, status: created.status }).toEqual({ ...headers, status: 201 });
      // The inspector's buttons: an approval answer and a cancel, here of a turn that already ended.
      const cancelled = await rawRequest(h.url, { method: 'POST', path: `/sessions/${sessionId}/turns/${turnId}/cancel`, headers });
      expect({ ...headers, status: cancelled.status, code: cancelled.code }).toEqual({ ...headers, status: 409, code: 'TurnNotActive' });
    }
    // Another origin than the one CORS allows, and the right one on another host's name.
    const other = await rawRequest(h.url, { method: 'POST', path: '/sessions', headers: { origin: 'https://app.example.evil', ...json }, body: '{}' });
    expect(other).toMatchObject({ status: 403, code: 'ForbiddenOrigin' });
    const crossed = await rawRequest(h.url, { method: 'POST', path: '/sessions', headers: { host: `localhost:${port}`, origin: `http://127.0.0.1:${port}`, ...json }, body: '{}' });
    expect(crossed).toMatchObject({ status: 403, code: 'ForbiddenOrigin' });
  });

  it.skipIf(skip)('answers a body that is not JSON with 415, as a browser sends it without a preflight, and stores nothing', async () => {
    const h = await open();
    const sessionId = await newSession(h);
    const sessionsBefore = await h.storage.listSessions({ limit: 100 });
    const turnBody = JSON.stringify({ clientRequestId: 'csrf', input: [{ type: 'text', text: 'hi' }] });
    const bodies: [string, string, string | undefined][] = [
      ['/sessions', '{}', 'text/plain'],
      ['/sessions', '{}', 'text/plain;charset=UTF-8'],
      [`/sessions/${sessionId}/turns`, turnBody, 'text/plain'],
      [`/sessions/${sessionId}/turns`, turnBody, 'application/x-www-form-urlencoded'],
      [`/sessions/${sessionId}/turns`, turnBody, 'multipart/form-data; boundary=x'],
      [`/sessions/${sessionId}/turns`, turnBody, 'application/jsonx'],
      [`/sessions/${sessionId}/turns`, turnBody, undefined],
      ['/api/chat', JSON.stringify({ id: 'csrf-chat', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }), 'text/plain'],
    ];
    for (const [path, body, type] of bodies) {
      const answer = await rawRequest(h.url, { method: 'POST', path, headers: type === undefined ? {} : { 'content-type': type }, body });
      expect({ path, type, status: answer.status, code: answer.code }).toEqual({ path, type, status: 415, code: 'UnsupportedMediaType' });
    }
    expect(await h.storage.listSessions({ limit: 100 })).toEqual(sessionsBefore);
    expect(await h.storage.listTurns(sessionId)).toEqual([]);
    // The same bodies as JSON are taken.
    expect((await rawRequest(h.url, { method: 'POST', path: `/sessions/${sessionId}/turns`, headers: json, body: turnBody })).status).toBe(202);
    expect((await rawRequest(h.url, { method: 'POST', path: '/sessions', headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{}' })).status).toBe(201);
  });

  it.skipIf(skip)('answers a body on a command that takes none with 415, and takes an empty one whatever its type', async () => {
    const h = await open();
    const { sessionId, turnId } = await sessionWithTurn(h);
    const bodyless = [`/sessions/${sessionId}/turns/${turnId}/cancel`, `/sessions/${sessionId}/compact`];
    for (const path of bodyless) {
      for (const [type, body] of [['application/json', '{}'], ['text/plain', 'x'], [undefined, 'x']] as const) {
        const answer = await rawRequest(h.url, { method: 'POST', path, headers: type === undefined ? {} : { 'content-type': type }, body });
        expect({ path, type, status: answer.status, code: answer.code }).toEqual({ path, type, status: 415, code: 'UnsupportedMediaType' });
      }
    }
    const chunked = { 'transfer-encoding': 'chunked' };
    expect(await rawRequest(h.url, { method: 'POST', path: bodyless[0]!, headers: chunked, body: 'x' })).toMatchObject({ status: 415, code: 'UnsupportedMediaType' });
    expect(await rawRequest(h.url, { method: 'POST', path: bodyless[0]!, headers: chunked, body: '' })).toMatchObject({ status: 409, code: 'TurnNotActive' });
    const cancel = await rawRequest(h.url, { method: 'POST', path: bodyless[0]!, headers: json, body: '' });
    expect(cancel).toMatchObject({ status: 409, code: 'TurnNotActive' });
    // Had a refused compact run, there would be nothing left to compact now.
    const compact = await rawRequest(h.url, { method: 'POST', path: bodyless[1]!, body: '' });
    expect(compact.status).toBe(200);
  });
});
