import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { base64url, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { startHost, type HostOptions } from '../../src/host/host.js';
import type { Authenticate } from '../../src/host/auth.js';
import { scriptedModel } from '../../src/index.js';
import { bundled } from '../support/bundles.js';
import { sqliteFile, type DurableDatabase } from '../support/databases.js';
import { call, testHost, type TestHost } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { logMessages } from '../support/log-lines.js';
import { useTempDirs } from '../support/workspace.js';

/**
 * Issue 25, who a request comes from: signed identities (HS256 with a shared secret, RS256/ES256
 * with the issuer's JWKS), the embedder's `authenticate`, the shared `--token`, and roles. Every
 * refusal is the same 401 — `WWW-Authenticate: Bearer error="invalid_token"` and one body — so a
 * refused token never learns why. Real HTTP on loopback, real SQLite, real signatures (jose).
 */

const SECRET = 'identities-test-secret-0123456789abcdef';
const OTHER_SECRET = 'another-secret-of-the-right-size-0123456789';
const UNAUTHORIZED = { error: { code: 'Unauthorized', message: 'a valid bearer token is required' } };
const CHALLENGE = 'Bearer error="invalid_token"';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tempDir = useTempDirs('turnchart-identities-');

const now = () => Math.floor(Date.now() / 1000);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** An HS256 token over `claims` (an hour's `exp` unless the claims give one). */
function hs256(claims: JWTPayload, secret = SECRET, alg = 'HS256'): Promise<string> {
  return new SignJWT({ exp: now() + 3600, ...claims }).setProtectedHeader({ alg, typ: 'JWT' }).setIssuedAt().sign(new TextEncoder().encode(secret));
}

/** A token signed with an asymmetric key, its header naming `kid`. */
function signed(claims: JWTPayload, key: CryptoKey, alg: 'RS256' | 'ES256', kid?: string): Promise<string> {
  return new SignJWT({ exp: now() + 3600, ...claims }).setProtectedHeader({ alg, typ: 'JWT', ...(kid && { kid }) }).setIssuedAt().sign(key);
}

/** `alg: none`, built by hand: no signature at all. */
function unsigned(claims: JWTPayload): string {
  const part = (value: unknown) => base64url.encode(JSON.stringify(value));
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ exp: now() + 3600, ...claims })}.`;
}

let db: DurableDatabase | undefined;
let host: TestHost | undefined;
afterEach(async () => {
  await host?.close();
  await db?.drop();
  [db, host] = [undefined, undefined];
});

async function open(options: Partial<Omit<HostOptions, 'model' | 'storage'>>): Promise<TestHost> {
  db = sqliteFile();
  host = await testHost(db, [{ text: 'one' }], options);
  return host;
}

/** Creates a session as the caller `headers` name; its id. */
async function createAs(h: TestHost, headers: Record<string, string>): Promise<string> {
  const created = await h.call('POST', '/sessions', {}, headers);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.sessionId as string;
}

/** A request refused as every refusal is: 401, the challenge, the one body. */
async function expectRefused(h: TestHost, headers: Record<string, string>, label: string): Promise<void> {
  const response = await fetch(`${h.url}/sessions`, { headers });
  expect({ label, status: response.status, challenge: response.headers.get('www-authenticate'), body: await response.json() }).toEqual({
    label,
    status: 401,
    challenge: CHALLENGE,
    body: UNAUTHORIZED,
  });
}

describe('HS256 identities', () => {
  it('takes a valid token: its sub owns the session it creates', async () => {
    const h = await open({ jwt: { keys: { secret: SECRET } } });
    const alice = bearer(await hs256({ sub: 'alice' }));
    const sessionId = await createAs(h, alice);
    expect((await h.storage.getSession(sessionId))?.principal).toBe('alice');
    const list = await h.call('GET', '/sessions', undefined, alice);
    expect(list.body.sessions).toEqual([expect.objectContaining({ sessionId, principal: 'alice' })]);
    expect((await h.call('GET', `/sessions/${sessionId}`, undefined, alice)).status).toBe(200);
    // Another sub is another user: the session is not there for them.
    expect(await h.call('GET', `/sessions/${sessionId}`, undefined, bearer(await hs256({ sub: 'bob' })))).toEqual({
      status: 404,
      body: { error: { code: 'UnknownSession', message: `no session '${sessionId}'` } },
    });
  });

  it('refuses every bad token with the same 401 and the invalid_token challenge, never saying why', async () => {
    const h = await open({ jwt: { keys: { secret: SECRET } } });
    const rsa = await generateKeyPair('RS256');
    const refused: [string, Record<string, string>][] = [
      ['expired', bearer(await hs256({ sub: 'alice', exp: now() - 3600 }))],
      ['not yet valid', bearer(await hs256({ sub: 'alice', nbf: now() + 3600 }))],
      ['wrong signature', bearer(await hs256({ sub: 'alice' }, OTHER_SECRET))],
      ['signature of another token', bearer((await hs256({ sub: 'admin', roles: ['admin'] })).split('.').slice(0, 2).join('.') + '.' + (await hs256({ sub: 'alice' })).split('.')[2])],
      ['missing sub', bearer(await hs256({}))],
      ['empty sub', bearer(await hs256({ sub: '' }))],
      ['unstorable sub', bearer(await hs256({ sub: 'ali\u0000ce' }))],
      ['alg none', bearer(unsigned({ sub: 'alice' }))],
      ['alg none, signature kept', bearer(unsigned({ sub: 'alice' }) + (await hs256({ sub: 'alice' })).split('.')[2])],
      ['HS512 with the right secret', bearer(await hs256({ sub: 'alice' }, SECRET, 'HS512'))],
      ['RS256 offered to an HS256 host', bearer(await signed({ sub: 'alice' }, rsa.privateKey, 'RS256', 'k1'))],
      ['garbage', bearer('not-a-jwt')],
      ['three garbage parts', bearer('a.b.c')],
      ['an empty bearer', { authorization: 'Bearer ' }],
      ['another scheme', { authorization: `Basic ${Buffer.from(`alice:${SECRET}`).toString('base64')}` }],
      ['the secret as a bearer', bearer(SECRET)],
      ['no header', {}],
    ];
    for (const [label, headers] of refused) await expectRefused(h, headers, label);
    // The host is unharmed, and the right token still works.
    expect((await h.call('GET', '/sessions', undefined, bearer(await hs256({ sub: 'alice' })))).status).toBe(200);
  });

  it('asks for the issuer and audience when set: wrong or missing is refused like any bad token', async () => {
    const h = await open({ jwt: { keys: { secret: SECRET }, issuer: 'https://id.example', audience: 'turnchart' } });
    const good = { sub: 'alice', iss: 'https://id.example', aud: 'turnchart' };
    expect((await h.call('GET', '/sessions', undefined, bearer(await hs256(good)))).status).toBe(200);
    expect((await h.call('GET', '/sessions', undefined, bearer(await hs256({ ...good, aud: ['other', 'turnchart'] })))).status).toBe(200);
    await expectRefused(h, bearer(await hs256({ ...good, iss: 'https://evil.example' })), 'wrong issuer');
    await expectRefused(h, bearer(await hs256({ ...good, aud: 'another-service' })), 'wrong audience');
    await expectRefused(h, bearer(await hs256({ sub: 'alice', aud: 'turnchart' })), 'no issuer');
    await expectRefused(h, bearer(await hs256({ sub: 'alice', iss: 'https://id.example' })), 'no audience');
  });

  it('makes an admin of roles: ["admin"] and of roles: "admin user", and of nothing else', async () => {
    const h = await open({ jwt: { keys: { secret: SECRET } } });
    const sessionId = await createAs(h, bearer(await hs256({ sub: 'alice' })));
    const bobs = await createAs(h, bearer(await hs256({ sub: 'bob' })));
    for (const roles of [['admin'], 'admin user', 'user admin', ['user', 'admin']]) {
      const admin = bearer(await hs256({ sub: 'root', roles }));
      expect((await h.call('GET', `/sessions/${sessionId}`, undefined, admin)).status, JSON.stringify(roles)).toBe(200);
      const list = await h.call('GET', '/sessions', undefined, admin);
      expect((list.body.sessions as { sessionId: string; principal: string }[]).map((s) => [s.sessionId, s.principal]).sort()).toEqual(
        [
          [sessionId, 'alice'],
          [bobs, 'bob'],
        ].sort(),
      );
    }
    for (const roles of [['user'], 'administrator', ['Admin'], 'adminuser', [['admin']], { admin: true }, 7]) {
      const notAdmin = bearer(await hs256({ sub: 'carol', roles }));
      expect((await h.call('GET', `/sessions/${sessionId}`, undefined, notAdmin)).status, JSON.stringify(roles)).toBe(404);
      expect((await h.call('GET', '/sessions', undefined, notAdmin)).body.sessions).toEqual([]);
    }
  });

  it('takes the shared --token beside JWTs as the operator, an admin; the operator\'s sessions are not a JWT user\'s', async () => {
    const TOKEN = 'shared-token-beside-jwts-0123456789';
    const h = await open({ token: TOKEN, jwt: { keys: { secret: SECRET } } });
    const alice = bearer(await hs256({ sub: 'alice' }));
    const alices = await createAs(h, alice);
    const operators = await createAs(h, bearer(TOKEN));
    expect((await h.storage.getSession(operators))?.principal).toBe('operator');
    expect((await h.call('GET', `/sessions/${alices}`, undefined, bearer(TOKEN))).status).toBe(200);
    const list = await h.call('GET', '/sessions', undefined, bearer(TOKEN));
    expect((list.body.sessions as { principal: string }[]).map((s) => s.principal).sort()).toEqual(['alice', 'operator']);
    expect((await h.call('GET', `/sessions/${operators}`, undefined, alice)).status).toBe(404);
    expect((await h.call('GET', '/sessions', undefined, alice)).body.sessions).toEqual([expect.objectContaining({ sessionId: alices })]);
    // /healthz says more only to the shared token's holder, not to a JWT user.
    expect((await h.call('GET', '/healthz', undefined, bearer(TOKEN))).body).toEqual({ ok: true, openSessions: 2 });
    expect((await h.call('GET', '/healthz', undefined, alice)).body).toEqual({ ok: true });
    // A token that is neither: refused as any.
    await expectRefused(h, bearer(`${TOKEN}x`), 'a wrong shared token');
  });

  it('refuses a JWT whose sub is the operator\'s principal: it would own what the shared token (or a host without auth) created', async () => {
    const TOKEN = 'shared-token-beside-jwts-0123456789';
    const h = await open({ token: TOKEN, jwt: { keys: { secret: SECRET } } });
    const operators = await createAs(h, bearer(TOKEN));
    expect((await h.storage.getSession(operators))?.principal).toBe('operator');
    await expectRefused(h, bearer(await hs256({ sub: 'operator' })), 'sub: operator');
    expect((await h.call('GET', `/sessions/${operators}`, undefined, bearer(await hs256({ sub: 'operator' })))).status).toBe(401);
    // Any other name is a user like any.
    expect((await h.call('GET', `/sessions/${operators}`, undefined, bearer(await hs256({ sub: 'operator2' })))).status).toBe(404);
  });

  it('refuses to start with a secret shorter than 32 bytes', async () => {
    const workspace = await tempDir();
    const start = (secret: string) =>
      startHost({ host: '127.0.0.1', port: 0, db: ':memory:', workspace, model: scriptedModel([]), idleTtlSeconds: 60, jwt: { keys: { secret } }, warn: () => undefined });
    await expect(start('x'.repeat(31))).rejects.toMatchObject({ code: 'InvalidOptions', message: expect.stringContaining('at least 32 bytes') });
    // Bytes, not characters: sixteen two-byte characters are 32 bytes.
    const started = await start('é'.repeat(16));
    await started.close();
  });
});

/** A JWKS endpoint on loopback that counts how often it is fetched; `keys` is what it serves, changed at will. */
async function jwksServer(): Promise<{ url: string; keys: JWK[]; fetches(): number; close(): Promise<void> }> {
  let fetches = 0;
  const keys: JWK[] = [];
  const server: Server = createServer((request, response) => {
    if (request.url !== '/.well-known/jwks.json') {
      response.writeHead(404).end();
      return;
    }
    fetches += 1;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    keys,
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function publicJwk(key: CryptoKey, kid: string, alg: 'RS256' | 'ES256'): Promise<JWK> {
  return { ...(await exportJWK(key)), kid, alg, use: 'sig' };
}

describe('identities signed by the issuer\'s keys (JWKS)', () => {
  let jwks: Awaited<ReturnType<typeof jwksServer>> | undefined;
  afterEach(async () => {
    await jwks?.close();
    jwks = undefined;
  });

  it('verifies RS256 and ES256 tokens by kid, fetching the keys once, not per request', async () => {
    jwks = await jwksServer();
    const rsa = await generateKeyPair('RS256');
    const ec = await generateKeyPair('ES256');
    jwks.keys.push(await publicJwk(rsa.publicKey, 'rsa-1', 'RS256'), await publicJwk(ec.publicKey, 'ec-1', 'ES256'));
    const h = await open({ jwt: { keys: { jwksUrl: jwks.url }, issuer: 'https://id.example' } });
    expect(jwks.fetches()).toBe(0);

    const claims = (sub: string) => ({ sub, iss: 'https://id.example' });
    const alice = bearer(await signed(claims('alice'), rsa.privateKey, 'RS256', 'rsa-1'));
    const bob = bearer(await signed(claims('bob'), ec.privateKey, 'ES256', 'ec-1'));
    const alices = await createAs(h, alice);
    const bobs = await createAs(h, bob);
    expect((await h.storage.getSession(alices))?.principal).toBe('alice');
    expect((await h.storage.getSession(bobs))?.principal).toBe('bob');
    expect((await h.call('GET', `/sessions/${bobs}`, undefined, alice)).status).toBe(404);
    expect(jwks.fetches()).toBe(1);

    // Many requests, with tokens never seen before (no verified-token cache helps): still that one fetch.
    for (let i = 0; i < 10; i += 1) {
      const token = i % 2 === 0 ? await signed(claims(`user-${i}`), rsa.privateKey, 'RS256', 'rsa-1') : await signed(claims(`user-${i}`), ec.privateKey, 'ES256', 'ec-1');
      expect((await h.call('GET', '/sessions', undefined, bearer(token))).status).toBe(200);
    }
    expect(jwks.fetches()).toBe(1);

    // Refused, each the same way: a key the set does not hold (within the cooldown, no fetch for it), the
    // right kid with the other key's signature, an RS256 token whose header says ES256, an HS256 token
    // keyed with the public key (algorithm confusion), an expired one, one from another issuer.
    const stranger = await generateKeyPair('RS256');
    const publicPem = JSON.stringify(await exportJWK(rsa.publicKey));
    const refused: [string, string][] = [
      ['unknown kid', await signed(claims('mallory'), stranger.privateKey, 'RS256', 'rsa-9')],
      ['known kid, another key', await signed(claims('mallory'), stranger.privateKey, 'RS256', 'rsa-1')],
      ['no kid, another key', await signed(claims('mallory'), stranger.privateKey, 'RS256')],
      ['HS256 keyed with the public key', await hs256(claims('mallory'), publicPem)],
      ['alg none', unsigned(claims('mallory'))],
      ['expired', await signed({ ...claims('alice'), exp: now() - 3600 }, rsa.privateKey, 'RS256', 'rsa-1')],
      ['another issuer', await signed({ sub: 'alice', iss: 'https://evil.example' }, rsa.privateKey, 'RS256', 'rsa-1')],
    ];
    for (const [label, token] of refused) await expectRefused(h, bearer(token), label);
    expect(jwks.fetches()).toBe(1);
  });

  it('accepts a key the issuer rotates in, once the cooldown after the last fetch has passed', async () => {
    jwks = await jwksServer();
    const first = await generateKeyPair('RS256');
    const next = await generateKeyPair('ES256');
    jwks.keys.push(await publicJwk(first.publicKey, 'key-1', 'RS256'));
    // No cooldown here, so the test needs no clock: an unknown kid fetches the set again at once.
    const h = await open({ jwt: { keys: { jwksUrl: jwks.url }, jwksCooldownMs: 0 } });
    const alice = bearer(await signed({ sub: 'alice' }, first.privateKey, 'RS256', 'key-1'));
    const alices = await createAs(h, alice);
    expect(jwks.fetches()).toBe(1);

    // Signed with the next key before the issuer publishes it: refused (after looking once more).
    const early = bearer(await signed({ sub: 'alice' }, next.privateKey, 'ES256', 'key-2'));
    await expectRefused(h, early, 'a kid not published yet');
    expect(jwks.fetches()).toBe(2);

    // The issuer publishes it, and retires the first key.
    jwks.keys.splice(0, jwks.keys.length, await publicJwk(next.publicKey, 'key-2', 'ES256'));
    expect((await h.call('GET', `/sessions/${alices}`, undefined, early)).status).toBe(200);
    expect(jwks.fetches()).toBe(3);
    for (let i = 0; i < 5; i += 1) {
      expect((await h.call('GET', '/sessions', undefined, bearer(await signed({ sub: `user-${i}` }, next.privateKey, 'ES256', 'key-2')))).status).toBe(200);
    }
    expect(jwks.fetches()).toBe(3);
  });

  it('refuses, and keeps serving, when the key set cannot be fetched', async () => {
    jwks = await jwksServer();
    const rsa = await generateKeyPair('RS256');
    const h = await open({ jwt: { keys: { jwksUrl: jwks.url.replace('jwks.json', 'missing.json') } } });
    await expectRefused(h, bearer(await signed({ sub: 'alice' }, rsa.privateKey, 'RS256', 'rsa-1')), 'keys unreachable');
    expect((await h.call('GET', '/healthz')).status).toBe(200);
  });
});

describe('the embedder\'s authenticate', () => {
  /** A gateway's scheme: `X-User` names the caller, `X-Roles` their roles; `broken` answers what is not a caller, `throw` throws. */
  const gateway: Authenticate = (request) => {
    const user = request.headers.get('x-user');
    if (user === null) return null;
    if (user === 'broken') return { principal: 42, roles: 'admin' } as never;
    if (user === 'throw') throw new Error('the gateway check failed');
    return { principal: user, roles: (request.headers.get('x-roles') ?? '').split(',').filter(Boolean) };
  };

  it('takes the caller it answers; null is 401; a malformed answer or a throw is 500 InternalError, and the host goes on', async () => {
    const warnings: string[] = [];
    const h = await open({ authenticate: gateway, warn: (message) => warnings.push(message) });
    const alices = await createAs(h, { 'x-user': 'alice' });
    expect((await h.storage.getSession(alices))?.principal).toBe('alice');
    expect((await h.call('GET', `/sessions/${alices}`, undefined, { 'x-user': 'bob' })).status).toBe(404);
    expect((await h.call('GET', `/sessions/${alices}`, undefined, { 'x-user': 'ops', 'x-roles': 'admin' })).status).toBe(200);

    await expectRefused(h, {}, 'no X-User');
    await expectRefused(h, { authorization: 'Bearer anything' }, 'a bearer but no JWT keys');
    for (const user of ['broken', 'throw']) {
      const answer = await h.call('GET', '/sessions', undefined, { 'x-user': user });
      expect(answer, user).toEqual({ status: 500, body: { error: { code: 'InternalError', message: 'the host could not answer this request' } } });
    }
    // Reported to the operator, not to the caller.
    expect(warnings.some((w) => w.includes('authenticate answered a caller that is not'))).toBe(true);
    expect(warnings.some((w) => w.includes('the gateway check failed'))).toBe(true);
    expect((await h.call('GET', '/sessions', undefined, { 'x-user': 'alice' })).body.sessions).toEqual([expect.objectContaining({ sessionId: alices })]);
  });

  it('falls through to JWTs when it answers null', async () => {
    const h = await open({ authenticate: gateway, jwt: { keys: { secret: SECRET } } });
    const viaHeader = await createAs(h, { 'x-user': 'alice' });
    expect((await h.call('GET', `/sessions/${viaHeader}`, undefined, bearer(await hs256({ sub: 'alice' })))).status).toBe(200);
    expect((await h.call('GET', `/sessions/${viaHeader}`, undefined, bearer(await hs256({ sub: 'bob' })))).status).toBe(404);
    await expectRefused(h, bearer(await hs256({ sub: 'alice' }, OTHER_SECRET)), 'a bad JWT behind the hook');
  });
});

function runCli(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [bundled('cli'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
}

describe('turnchart serve with --jwt-secret', { timeout: 60_000 }, () => {
  let running: HostProcess | undefined;
  afterEach(async () => {
    running?.kill('SIGKILL');
    await running?.exited;
    running = undefined;
  });

  it('serves JWT users, each seeing only their own sessions; says the auth mode but never the secret, not even in ps', async () => {
    const dbFile = sqliteFile();
    const secret = `cli-jwt-secret-${Math.random().toString(36).slice(2)}-0123456789abcdef`;
    try {
      running = await spawnHost(['--db', dbFile.file, '--workspace', await tempDir(), '--jwt-secret', secret]);
      expect(logMessages(running.stderr())).toContain('auth: HS256 JWTs, each user sees their own sessions');
      expect(running.output()).not.toContain(secret);

      const alice = bearer(await hs256({ sub: 'alice' }, secret));
      const bob = bearer(await hs256({ sub: 'bob' }, secret));
      const created = await call(running.url, 'POST', '/sessions', {}, alice);
      expect(created.status).toBe(201);
      const sessionId = created.body.sessionId as string;
      expect((await call(running.url, 'GET', `/sessions/${sessionId}`, undefined, alice)).status).toBe(200);
      expect(await call(running.url, 'GET', `/sessions/${sessionId}`, undefined, bob)).toEqual({ status: 404, body: { error: { code: 'UnknownSession', message: `no session '${sessionId}'` } } });
      expect((await call(running.url, 'GET', '/sessions', undefined, bob)).body.sessions).toEqual([]);
      expect((await call(running.url, 'GET', '/sessions', undefined, alice)).body.sessions).toEqual([expect.objectContaining({ sessionId, principal: 'alice' })]);
      expect((await call(running.url, 'GET', '/sessions', undefined, bearer(await hs256({ sub: 'alice' }, OTHER_SECRET)))).status).toBe(401);
      expect((await call(running.url, 'GET', '/sessions')).status).toBe(401);

      const pid = String(running.child.pid);
      const ps = spawnSync('ps', ['-ww', '-o', 'args=', '-p', pid], { encoding: 'utf8' });
      expect(ps.status).toBe(0);
      expect(ps.stdout).toContain('turnchart serve');
      expect(ps.stdout).toContain('--jwt-secret ***');
      expect(ps.stdout).not.toContain(secret);
      if (process.platform === 'linux') expect((await readFile(`/proc/${pid}/cmdline`, 'latin1')).replaceAll('\0', ' ')).not.toContain(secret);
    } finally {
      running?.kill('SIGKILL');
      await running?.exited;
      running = undefined;
      await dbFile.drop();
    }
  });

  it('refuses a secret under 32 bytes, and --jwt-secret with --jwks-url, before listening', () => {
    const short = runCli(['serve', '--port', '0', '--db', ':memory:', '--jwt-secret', 'short-secret-value']);
    expect(short.status).toBe(2);
    expect(short.stderr).toContain('--jwt-secret (TURNCHART_JWT_SECRET)');
    expect(short.stderr).toContain('32 bytes');
    expect(short.stdout + short.stderr).not.toContain('short-secret-value');
    expect(short.stdout).not.toContain('listening');

    const fromEnv = runCli(['serve', '--port', '0', '--db', ':memory:'], { TURNCHART_JWT_SECRET: 'short-secret-value' });
    expect(fromEnv.status).toBe(2);
    expect(fromEnv.stderr).toContain('32 bytes');

    const both = runCli(['serve', '--port', '0', '--db', ':memory:', '--jwt-secret', SECRET, '--jwks-url', 'https://id.example/.well-known/jwks.json']);
    expect(both.status).toBe(2);
    expect(both.stderr).toContain('--jwt-secret (TURNCHART_JWT_SECRET) and --jwks-url (TURNCHART_JWKS_URL) are both set; give one');
    expect(both.stdout + both.stderr).not.toContain(SECRET);
    expect(both.stdout).not.toContain('listening');
  });
});
