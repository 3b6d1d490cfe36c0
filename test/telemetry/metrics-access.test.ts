import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteFile, type DurableDatabase } from '../support/databases.js';
import { call, testHost, type TestHost } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { until } from '../support/poll.js';
import { parsePrometheusText, valueOf } from '../support/prometheus-text.js';
import { rawRequest } from '../support/raw-http.js';
import { useTempDirs } from '../support/workspace.js';

const TOKEN = 'metrics-test-token-0123456789abcdef';
const SECRET = 'metrics-test-jwt-secret-0123456789abcdef';
const tempDir = useTempDirs('turnchart-metrics-');

function jwtFor(sub: string, roles: string[] = []): Promise<string> {
  return new SignJWT({ sub, roles, exp: Math.floor(Date.now() / 1000) + 3600 }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(SECRET));
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { headers });
  return { status: response.status, text: await response.text() };
}

describe('who may read GET /metrics (issue 27)', () => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });

  it('a host with a token refuses it without the token (401) and serves it with it', async () => {
    db = sqliteFile();
    host = await testHost(db, [], { token: TOKEN });
    const refused = await get(`${host.url}/metrics`);
    expect(refused.status).toBe(401);
    expect(refused.text).not.toContain('turnchart_');
    expect((await get(`${host.url}/metrics`, { authorization: 'Bearer wrong' })).status).toBe(401);
    const served = await get(`${host.url}/metrics`, { authorization: `Bearer ${TOKEN}` });
    expect(served.status).toBe(200);
    expect(valueOf(parsePrometheusText(served.text), 'turnchart_open_sessions')).toBe(0);
  });

  it('a host with JWTs serves it to admins only: a user is refused 403 Forbidden', async () => {
    db = sqliteFile();
    host = await testHost(db, [], { jwt: { keys: { secret: SECRET } } });
    const user = await host.call('GET', '/metrics', undefined, { authorization: `Bearer ${await jwtFor('alice')}` });
    expect(user).toMatchObject({ status: 403, body: { error: { code: 'Forbidden' } } });
    const admin = await get(`${host.url}/metrics`, { authorization: `Bearer ${await jwtFor('root', ['admin'])}` });
    expect(admin.status).toBe(200);
    expect(parsePrometheusText(admin.text).types.get('turnchart_turns_total')).toBe('counter');
  });

  it('is listed in the OpenAPI document', async () => {
    db = sqliteFile();
    host = await testHost(db, []);
    const doc = await host.call('GET', '/openapi.json');
    expect(Object.keys(doc.body.paths as Record<string, unknown>)).toContain('/metrics');
  });
});

describe('turnchart serve --metrics-port (issue 27), a real process', { timeout: 60_000 }, () => {
  const processes: HostProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      p.kill('SIGKILL');
      await p.exited;
    }
  });

  it('serves the metrics there without the token, and only the metrics; the API port still asks for the token', async () => {
    const dir = await tempDir();
    await mkdir(path.join(dir, 'workspace'));
    const host = await spawnHost(['--db', path.join(dir, 'turnchart.db'), '--workspace', path.join(dir, 'workspace'), '--metrics-port', '0'], { TURNCHART_TOKEN: TOKEN });
    processes.push(host);
    // The metrics listener's address is logged right after the listening line: nothing else tells it.
    let metricsUrl = '';
    await until('the metrics line', () => {
      metricsUrl = /metrics on (http:\/\/[^\s"]+\/metrics)/.exec(host.output())?.[1] ?? '';
      return metricsUrl !== '';
    });
    expect(new URL(metricsUrl).hostname).toBe('127.0.0.1');
    expect(new URL(metricsUrl).port).not.toBe(new URL(host.url).port);

    // A turn through the API, so the process's own counters have something to say.
    const auth = { authorization: `Bearer ${TOKEN}` };
    const created = await call(host.url, 'POST', '/sessions', { permissionMode: 'auto' }, auth);
    const sessionId = created.body.sessionId as string;
    const started = await call(host.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'what is here?' }] }, auth);
    expect(started.status).toBe(202);
    expect((await call(host.url, 'GET', `/sessions/${sessionId}/turns/${started.body.turnId as string}?wait=30`, undefined, auth)).body).toMatchObject({ status: 'completed' });

    const scraped = await get(metricsUrl);
    expect(scraped.status).toBe(200);
    const m = parsePrometheusText(scraped.text);
    expect(valueOf(m, 'turnchart_turns_total', { status: 'completed' })).toBe(1);
    expect(valueOf(m, 'turnchart_open_sessions')).toBe(1);
    expect(valueOf(m, 'process_start_time_seconds')).toBeGreaterThan(0);
    expect(scraped.text).not.toContain(sessionId);
    expect(scraped.text).not.toContain(TOKEN);

    // Nothing of the API is reachable through the metrics port.
    const base = metricsUrl.replace(/\/metrics$/, '');
    for (const route of ['/sessions', '/healthz', `/sessions/${sessionId}`, '/metrics/x']) expect((await get(base + route)).status).toBe(404);
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(404);
    // A page that rebinds a name of its own to 127.0.0.1 is refused as on the API's port (issue 22's finding 1).
    const port = new URL(metricsUrl).port;
    expect((await rawRequest(base, { method: 'GET', path: '/metrics', headers: { host: `evil.example:${port}` } })).status).toBe(421);
    expect((await rawRequest(base, { method: 'GET', path: '/metrics', headers: { host: `localhost:${port}` } })).status).toBe(200);
    // The API's own /metrics still asks for the token.
    expect((await get(`${host.url}/metrics`)).status).toBe(401);
    expect((await get(`${host.url}/metrics`, auth)).status).toBe(200);

    host.kill('SIGTERM');
    expect(await host.exited).toBe(0);
  });

  it('refuses a --metrics-port that is not a port, naming the flag and its variable', async () => {
    await expect(spawnHost(['--metrics-port', 'nine', '--db', sqliteFile().file])).rejects.toThrow(/--metrics-port \(TURNCHART_METRICS_PORT\)/);
  });
});
