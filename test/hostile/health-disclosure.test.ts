import { afterEach, describe, expect, it } from 'vitest';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { testHost, type TestHost } from '../support/host.js';

/**
 * Issue 22: `/healthz` needs no token (a load balancer's probe has none), and it told anyone how
 * many sessions the host held and, while the database was away, what its driver said (addresses,
 * user names). Without the host's token it now says only whether the host is well.
 */

const DRIVER = new Error('connect ECONNREFUSED 10.0.0.7:5432: password authentication failed for user "turnchart"');
const DOWN = { status: 503, body: { ok: false, error: { code: 'StorageUnavailable', message: 'the database does not answer' } } };

describe.each(durableTargets)('the health check on $name', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    [db, host] = [undefined, undefined];
  });
  const open = async (options: Parameters<typeof testHost>[2] = {}) => {
    db = create();
    host = await testHost(db, [], options);
    return host;
  };

  it.skipIf(skip)('on a host without a token says only ok, and while storage fails only its code', async () => {
    const h = await open();
    expect((await h.call('POST', '/sessions', {})).status).toBe(201);
    expect(await h.call('GET', '/healthz')).toEqual({ status: 200, body: { ok: true } });
    // There is no token to prove anything with: a bearer header changes nothing.
    expect(await h.call('GET', '/healthz', undefined, { authorization: 'Bearer anything' })).toEqual({ status: 200, body: { ok: true } });
    h.storage.failAlways('ping', DRIVER);
    expect(await h.call('GET', '/healthz')).toEqual(DOWN);
    expect(await h.call('GET', '/healthz', undefined, { authorization: 'Bearer anything' })).toEqual(DOWN);
    h.storage.heal();
    expect(await h.call('GET', '/healthz')).toEqual({ status: 200, body: { ok: true } });
  });

  it.skipIf(skip)("on a host with a token says more only with the token: the open sessions, the driver's error", async () => {
    const h = await open({ token: 's3cret' });
    const auth = { authorization: 'Bearer s3cret' };
    expect((await h.call('POST', '/sessions', {}, auth)).status).toBe(201);
    expect(await h.call('GET', '/healthz')).toEqual({ status: 200, body: { ok: true } });
    expect(await h.call('GET', '/healthz', undefined, { authorization: 'Bearer wrong' })).toEqual({ status: 200, body: { ok: true } });
    expect(await h.call('GET', '/healthz', undefined, auth)).toEqual({ status: 200, body: { ok: true, openSessions: 1 } });
    h.storage.failAlways('ping', DRIVER);
    expect(await h.call('GET', '/healthz')).toEqual(DOWN);
    expect(await h.call('GET', '/healthz', undefined, { authorization: 'Bearer wrong' })).toEqual(DOWN);
    expect(await h.call('GET', '/healthz', undefined, auth)).toEqual({ status: 503, body: { ok: false, error: { code: 'StorageUnavailable', message: DRIVER.message } } });
  });
});
