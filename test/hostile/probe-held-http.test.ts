import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import { connect, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sqliteFile, type DurableDatabase } from '../support/databases.js';
import { newSession, testHost, type TestHost } from '../support/host.js';
import { operationsOf, type OpenApiDocument } from '../support/hostile/http-request.js';

/**
 * Issue 22, "what held, and must keep holding" — the HTTP API. Every attack the security probe
 * made on the host that was refused, replayed over loopback as it made it (raw sockets where a
 * client library would tidy the request up): the answer is the refusal, in the API's error shape,
 * and the host answers the next request and runs a turn afterwards.
 *
 * - Auth, on a host with a token: `Authorization: Basic`, the token in `?token=` or in a cookie,
 *   two `Authorization` headers, and paths that try to pass as the inspector's open page assets
 *   (`/inspect/../sessions`, `/inspect/assets/..%2f..%2fsessions`, encoded and doubled slashes,
 *   other cases): 401 on every protected route, or for an asset path no such asset — never data.
 * - Oversized input: more than 16 KiB of headers (431), bodies over 1 MiB declared or chunked
 *   (413), JSON nested 400 000 deep (a typed 400).
 * - Slow requests: headers or a body dripped forever (slowloris): 408 once the host's request
 *   timeouts pass (60 s for headers by default; the test gives the host short ones).
 *
 * The workspace side of the probe's list is `probe-held-tools.test.ts`. Related tests elsewhere:
 * `test/host/api-surface.test.ts` (the token on every route), `test/host/body-limit.test.ts`
 * (413, declared and chunked), `test/hostile/found-defects.test.ts` (431 and a malformed request
 * in the API's shape), the generated `http-headers`/`http-bodies`/`http-paths` suites.
 */

const TOKEN = 'probe-held-token-0123456789';
const BEARER = { authorization: `Bearer ${TOKEN}` };

let assets: string;
beforeAll(async () => {
  // A stand-in build of the inspector page: one real asset, so the open asset route is live.
  assets = await mkdtemp(path.join(os.tmpdir(), 'turnchart-probe-assets-'));
  await mkdir(path.join(assets, 'assets'));
  await writeFile(path.join(assets, 'index.html'), '<!doctype html><script type="module" src="/inspect/assets/app-1.js"></script>');
  await writeFile(path.join(assets, 'assets', 'app-1.js'), 'console.log(1)');
});
afterAll(() => rm(assets, { recursive: true, force: true }));

let db: DurableDatabase | undefined;
let host: TestHost | undefined;
afterEach(async () => {
  await host?.close();
  await db?.drop();
  [db, host] = [undefined, undefined];
});

async function open(options: Parameters<typeof testHost>[2] = {}): Promise<TestHost> {
  db = sqliteFile();
  host = await testHost(db, [{ text: 'one' }, { text: 'two' }, { text: 'three' }], { inspectorAssets: assets, ...options });
  return host;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  code: string | null;
}

function parseAnswer(text: string): Answer {
  const split = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, split === -1 ? text.length : split).split('\r\n');
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  let body = split === -1 ? '' : text.slice(split + 4);
  if (headers['transfer-encoding'] === 'chunked') body = unchunk(body);
  let code: string | null = null;
  try {
    code = (JSON.parse(body) as { error?: { code?: string } }).error?.code ?? null;
  } catch {
    // Not JSON: an asset, or nothing.
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body, code };
}

function unchunk(body: string): string {
  let out = '';
  for (let at = 0; ; ) {
    const end = body.indexOf('\r\n', at);
    const size = parseInt(body.slice(at, end), 16);
    if (!(size > 0)) return out;
    out += body.slice(end + 2, end + 2 + size);
    at = end + 2 + size + 2;
  }
}

/** Writes `head` (request line and header lines, as given: nothing normalized) and reads the answer until the host closes. */
function wire(base: string, head: string, body = ''): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(parseAnswer(text)));
    socket.write(`${head}\r\nHost: ${hostname}:${port}\r\nConnection: close\r\n\r\n${body}`);
  });
}

/** A body over node:http, so the host can answer and close before it is all sent: declared (`Content-Length`) or chunked. */
function sendBody(base: string, route: string, body: string, framing: 'length' | 'chunked'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', ...BEARER };
    if (framing === 'length') headers['content-length'] = Buffer.byteLength(body);
    const request = http.request(base + route, { method: 'POST', headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ ...parseAnswer(`HTTP/1.1 ${response.statusCode} x\r\n\r\n${text}`), headers: response.headers as Record<string, string> }));
    });
    // The host may close while the body is still going out: that is its answer, already read.
    request.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
    if (framing === 'chunked') for (let i = 0; i < body.length; i += 64 * 1024) request.write(body.slice(i, i + 64 * 1024));
    request.end(framing === 'length' ? body : undefined);
  });
}

/** The host still answers, and the session still completes a turn. */
async function expectUsable(h: TestHost, sessionId: string, auth: Record<string, string> = {}): Promise<void> {
  expect((await h.call('GET', '/healthz')).status).toBe(200);
  const turn = await h.call('POST', `/sessions/${sessionId}/turns`, { clientRequestId: `after-${Date.now()}`, input: [{ type: 'text', text: 'still there?' }] }, auth);
  expect(turn.status).toBe(202);
  const state = await h.call('GET', `/sessions/${sessionId}/turns/${turn.body.turnId as string}?wait=30`, undefined, auth);
  expect(state.body).toMatchObject({ status: 'completed' });
}

describe('auth on a host with a token (what the probe tried, refused)', () => {
  /** Every protected route: the API's (from its own OpenAPI document), the document itself, the inspector's data. */
  async function protectedRoutes(h: TestHost, sessionId: string): Promise<{ method: string; path: string }[]> {
    const doc = (await h.call('GET', '/openapi.json', undefined, BEARER)).body as unknown as OpenApiDocument;
    const ids: Record<string, string> = { sessionId, id: sessionId, turnId: 'turn_x', toolCallId: 'call_x', taskId: 'task_x' };
    const api = operationsOf(doc)
      .filter((op) => op.template !== '/healthz')
      .map((op) => ({ method: op.method, path: op.template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? 'x') }));
    const inspector = ['/inspect/api/charts', '/inspect/api/sessions', `/inspect/api/sessions/${sessionId}/stream`, `/inspect/api/sessions/${sessionId}/links`];
    return [...api, { method: 'GET', path: '/openapi.json' }, ...inspector.map((p) => ({ method: 'GET', path: p }))];
  }

  it('refuses Basic, ?token=, a cookie and two Authorization headers on every protected route with 401', async () => {
    const h = await open({ token: TOKEN });
    const sessionId = await newSession({ ...h, call: (m, p, b) => h.call(m, p, b, BEARER) });
    const routes = await protectedRoutes(h, sessionId);
    expect(routes.length).toBeGreaterThan(20);
    const basic = (userinfo: string) => `Authorization: Basic ${Buffer.from(userinfo).toString('base64')}`;
    const tricks: { name: string; request: (method: string, route: string) => string }[] = [
      { name: 'no credentials', request: (m, r) => `${m} ${r} HTTP/1.1` },
      { name: 'Basic with the token as password', request: (m, r) => `${m} ${r} HTTP/1.1\r\n${basic(`user:${TOKEN}`)}` },
      { name: 'Basic with the token as user', request: (m, r) => `${m} ${r} HTTP/1.1\r\n${basic(`${TOKEN}:`)}` },
      { name: 'Basic with the bare token', request: (m, r) => `${m} ${r} HTTP/1.1\r\nAuthorization: Basic ${TOKEN}` },
      { name: 'another scheme', request: (m, r) => `${m} ${r} HTTP/1.1\r\nAuthorization: Token ${TOKEN}` },
      { name: '?token=', request: (m, r) => `${m} ${r}${r.includes('?') ? '&' : '?'}token=${TOKEN}&access_token=${TOKEN} HTTP/1.1` },
      { name: 'a cookie', request: (m, r) => `${m} ${r} HTTP/1.1\r\nCookie: token=${TOKEN}; authorization=Bearer%20${TOKEN}; turnchart_token=${TOKEN}` },
      { name: 'the token in other headers', request: (m, r) => `${m} ${r} HTTP/1.1\r\nX-Api-Key: ${TOKEN}\r\nX-Auth-Token: ${TOKEN}\r\nProxy-Authorization: Bearer ${TOKEN}` },
      { name: 'two Authorization headers, the right one first', request: (m, r) => `${m} ${r} HTTP/1.1\r\nAuthorization: Bearer ${TOKEN}\r\nAuthorization: Bearer wrong` },
      { name: 'two Authorization headers, the right one last', request: (m, r) => `${m} ${r} HTTP/1.1\r\nAuthorization: Bearer wrong\r\nAuthorization: Bearer ${TOKEN}` },
    ];
    for (const { method, path: route } of routes) {
      for (const trick of tricks) {
        const answer = await wire(h.url, trick.request(method, route) + (method === 'GET' ? '' : '\r\nContent-Length: 0'));
        expect({ route: `${method} ${route}`, trick: trick.name, status: answer.status, code: answer.code }).toEqual({ route: `${method} ${route}`, trick: trick.name, status: 401, code: 'Unauthorized' });
        expect(answer.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      }
    }
    // The one right way still opens them.
    expect((await wire(h.url, `GET /sessions/${sessionId} HTTP/1.1\r\nAuthorization: Bearer ${TOKEN}`)).status).toBe(200);
    await expectUsable(h, sessionId, BEARER);
  });

  it('refuses every path that tries to pass as an open inspector asset: 401, or no such asset — never data', async () => {
    const h = await open({ token: TOKEN });
    const sessionId = await newSession({ ...h, call: (m, p, b) => h.call(m, p, b, BEARER) });
    // What the exemption is for still works without the token.
    expect((await wire(h.url, 'GET /inspect HTTP/1.1')).status).toBe(200);
    expect((await wire(h.url, 'GET /inspect/assets/app-1.js HTTP/1.1')).status).toBe(200);
    const tricks = [
      '/inspect/../sessions',
      '/inspect/./../sessions',
      '/inspect/assets/../../sessions',
      `/inspect/assets/../../sessions/${sessionId}`,
      '/inspect/assets/..%2f..%2fsessions',
      '/inspect/assets/..%2F..%2Fsessions',
      `/inspect/assets/..%2F..%2Fsessions%2F${sessionId}`,
      '/inspect/assets/%2e%2e/%2e%2e/sessions',
      '/inspect/assets/%2E%2E%2F%2E%2E%2Fsessions',
      '/inspect/assets/..%5c..%5csessions',
      '/inspect/assets/..\\..\\sessions',
      '/inspect/assets/..;/..;/sessions',
      '/inspect/assets/x/../../api/charts',
      '/inspect/assets/..%2fapi%2fcharts',
      `/inspect/assets/..%2fapi%2fsessions%2f${sessionId}%2fstream`,
      '/inspect/assets%2f..%2f..%2fsessions',
      '/inspect%2fassets/../../sessions',
      '//sessions',
      '///sessions',
      '/inspect//api/charts',
      '/inspect/assets//../../sessions',
      '//inspect/assets/../../sessions',
      '/INSPECT/api/charts',
      '/Inspect/Assets/../../sessions',
      '/inspect/ASSETS/../api/charts',
      '/SESSIONS',
      '/inspect/api/charts?/inspect/assets/x',
      '/inspect/api/charts#/inspect/assets/x',
      `http://127.0.0.1/sessions`,
    ];
    for (const trick of tricks) {
      const answer = await wire(h.url, `GET ${trick} HTTP/1.1`);
      const refused = (answer.status === 401 && answer.code === 'Unauthorized') || (answer.status === 404 && answer.code === 'NotFound') || (answer.status === 400 && answer.code === 'InvalidInput');
      expect(refused, `${trick}: ${answer.status} ${answer.body.slice(0, 200)}`).toBe(true);
      expect(answer.body, trick).not.toContain(sessionId);
      expect(answer.body, trick).not.toContain('"charts"');
    }
    await expectUsable(h, sessionId, BEARER);
  });
});

describe('oversized input (what the probe tried, refused)', () => {
  it('answers more than 16 KiB of headers 431 HeadersTooLarge, one header or many', async () => {
    const h = await open();
    const sessionId = await newSession(h);
    for (const headers of [`X-Big: ${'x'.repeat(17 * 1024)}`, Array.from({ length: 400 }, (_, i) => `X-Many-${i}: ${'y'.repeat(40)}`).join('\r\n')]) {
      const answer = await wire(h.url, `GET /sessions/${sessionId} HTTP/1.1\r\n${headers}`);
      expect({ status: answer.status, code: answer.code }).toEqual({ status: 431, code: 'HeadersTooLarge' });
    }
    await expectUsable(h, sessionId);
  });

  it('answers a body over 1 MiB 413 PayloadTooLarge, its size declared or sent chunked, and stores nothing', async () => {
    const h = await open({ token: TOKEN });
    const sessionId = await newSession({ ...h, call: (m, p, b) => h.call(m, p, b, BEARER) });
    const big = JSON.stringify({ clientRequestId: 'big', input: [{ type: 'text', text: 'x'.repeat(1024 * 1024 + 1) }] });
    for (const framing of ['length', 'chunked'] as const) {
      const answer = await sendBody(h.url, `/sessions/${sessionId}/turns`, big, framing);
      expect({ framing, status: answer.status, code: answer.code }).toEqual({ framing, status: 413, code: 'PayloadTooLarge' });
    }
    expect(await h.storage.listTurns(sessionId)).toEqual([]);
    await expectUsable(h, sessionId, BEARER);
  });

  it('answers JSON nested 400 000 deep with a typed 400, and goes on', async () => {
    const h = await open();
    const sessionId = await newSession(h);
    const deep = `${'['.repeat(400_000)}${']'.repeat(400_000)}`;
    const bodies: [string, string][] = [
      [`/sessions/${sessionId}/turns`, `{"clientRequestId":"deep","input":${deep}}`],
      [`/sessions/${sessionId}/turns`, deep],
      ['/sessions', `{"permissionMode":${deep}}`],
      [`/sessions/${sessionId}/agent-messages`, `{"from":"a","text":${'{"a":'.repeat(150_000)}1${'}'.repeat(150_000)}}`],
    ];
    for (const [route, body] of bodies) {
      expect(body.length).toBeLessThan(1024 * 1024);
      const answer = await sendBody(h.url, route, body, 'length');
      expect({ route, status: answer.status, code: answer.code }).toEqual({ route, status: 400, code: expect.stringMatching(/^Invalid/) });
    }
    expect(await h.storage.listTurns(sessionId)).toEqual([]);
    await expectUsable(h, sessionId);
  });
});

describe('slow requests (what the probe tried, cut off)', () => {
  /**
   * Opens a connection, writes `start`, then one more piece every 20 ms for as long as it stays
   * open; resolves with what the host answered once the host closes it. No sleep: the test waits
   * on the socket's close, which the host's own timeout brings.
   */
  function drip(base: string, start: string, piece: (i: number) => string): Promise<{ answer: Answer; ms: number }> {
    const { hostname, port } = new URL(base);
    return new Promise((resolve, reject) => {
      const began = performance.now();
      const socket: Socket = connect(Number(port), hostname);
      let text = '';
      let i = 0;
      const timer = setInterval(() => socket.writable && socket.write(piece(i++)), 20);
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ answer: parseAnswer(text), ms: performance.now() - began });
      });
      socket.write(start.replace('{host}', `${hostname}:${port}`));
    });
  }

  it('answers headers dripped forever (slowloris) 408 RequestTimeout at the headers timeout, and closes', async () => {
    const h = await open({ requestTimeouts: { headersMs: 400, requestMs: 800, checkIntervalMs: 50 } });
    const sessionId = await newSession(h);
    const { answer, ms } = await drip(h.url, 'GET /sessions HTTP/1.1\r\nHost: {host}\r\n', (i) => `X-Drip-${i}: ${i}\r\n`);
    expect({ status: answer.status, code: answer.code }).toEqual({ status: 408, code: 'RequestTimeout' });
    expect(ms).toBeGreaterThanOrEqual(350);
    expect(ms).toBeLessThan(10_000);
    await expectUsable(h, sessionId);
  });

  it('answers a body dripped forever 408 RequestTimeout at the request timeout, and closes', async () => {
    const h = await open({ requestTimeouts: { headersMs: 400, requestMs: 800, checkIntervalMs: 50 } });
    const sessionId = await newSession(h);
    const { answer, ms } = await drip(h.url, `POST /sessions/${sessionId}/agent-messages HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"from":"a","text":"`, () => 'x');
    expect({ status: answer.status, code: answer.code }).toEqual({ status: 408, code: 'RequestTimeout' });
    expect(ms).toBeGreaterThanOrEqual(750);
    expect(ms).toBeLessThan(10_000);
    await expectUsable(h, sessionId);
  });

  it('keeps Node’s defaults when not told otherwise: 60 s for headers, 300 s for the whole request', async () => {
    // A host started without `requestTimeouts` is the probe's `npm start`: its slowloris answer came at 60 s.
    const server = http.createServer();
    expect({ headers: server.headersTimeout, request: server.requestTimeout }).toEqual({ headers: 60_000, request: 300_000 });
    server.close();
  });
});
