import { describe, expect, it } from 'vitest';
import { isSecretKey, REDACTED, sanitize } from '../../src/inspect/sanitize.js';

const limits = { maxString: 10, maxItems: 3, maxDepth: 3, maxBytes: 1_000 };

describe('inspection sanitizer', () => {
  it('redacts keys that look like credentials, at any depth, and keeps counts that merely mention tokens', () => {
    const out = sanitize({
      apiKey: 'sk-123',
      headers: { Authorization: 'Bearer x', 'x-api-key': 'k', cookie: 'c' },
      nested: [{ password: 'p', client_secret: 's', refreshToken: 'r', token: 't', privateKey: 'pk' }],
      usage: { inputTokens: 5, maxOutputTokens: 10 },
      keyboard: 'qwerty',
    });
    expect(out).toEqual({
      apiKey: REDACTED,
      headers: { Authorization: REDACTED, 'x-api-key': REDACTED, cookie: REDACTED },
      nested: [{ password: REDACTED, client_secret: REDACTED, refreshToken: REDACTED, token: REDACTED, privateKey: REDACTED }],
      usage: { inputTokens: 5, maxOutputTokens: 10 },
      keyboard: 'qwerty',
    });
    for (const key of ['apiKey', 'api_key', 'APIKEY', 'accessToken', 'bearer', 'auth', 'sessionKey', 'AUTHORIZATION']) expect(isSecretKey(key), key).toBe(true);
    for (const key of ['tokens', 'inputTokens', 'key', 'keys', 'monkey', 'turnId', 'sessionId', 'author']) expect(isSecretKey(key), key).toBe(false);
  });

  it('redacts inside text that holds JSON, such as a tool call’s arguments', () => {
    const out = sanitize({ argumentsText: '{"path":"a","auth":{"password":"hunter2"}}', plain: '{not json', list: '[{"token":"t"}]' });
    expect(out).toEqual({ argumentsText: '{"path":"a","auth":"[redacted]"}', plain: '{not json', list: '[{"token":"[redacted]"}]' });
  });

  it('caps strings, arrays, object keys and depth, and says what it cut', () => {
    const out = sanitize({ s: 'abcdefghijklmnop', a: [1, 2, 3, 4, 5], deep: { b: { c: { d: 1 } } }, list: [[[1]]] }, { ...limits, maxItems: 10 }) as Record<string, unknown>;
    expect(out.s).toBe('abcdefghij… [6 more characters]');
    expect(out.a).toEqual([1, 2, 3, 4, 5]);
    expect(out.deep).toEqual({ b: { c: '[object]' } });
    expect(out.list).toEqual([['[array of 1]']]);
    expect(sanitize([1, 2, 3, 4, 5], limits)).toEqual([1, 2, 3, '[2 more items]']);
    expect(sanitize({ a: 1, b: 2, c: 3, d: 4 }, limits)).toEqual({ a: 1, b: 2, c: 3, '…': '1 more keys' });
  });

  it('keeps the whole under the byte budget', () => {
    const big = Array.from({ length: 500 }, (_, i) => ({ text: 'x'.repeat(1_000), i }));
    const out = sanitize({ big }, { maxString: 2_000, maxItems: 1_000, maxDepth: 6, maxBytes: 10_000 });
    const json = JSON.stringify(out);
    expect(json.length).toBeLessThan(13_000);
    expect(json).toContain('more items over size limit');
  });

  it('never throws and never walks into what it cannot copy', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    const throwing = Object.defineProperty({}, 'boom', { enumerable: true, get: () => { throw new Error('no'); } });
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const actor = { sessionId: 'x:1', id: 'turn', send: () => undefined, getSnapshot: () => ({}) };
    const out = sanitize({ cyclic, throwing, revoked: revoked.proxy, actor, fn: function named() {}, n: Number.NaN, big: 10n, when: new Date(0), err: new Error('bad'), bytes: new Uint8Array(4), map: new Map([['k', 1]]), set: new Set([1]) });
    expect(out).toEqual({
      cyclic: { name: 'loop', self: '[circular]' },
      throwing: { boom: '[unreadable]' },
      revoked: '[unreadable]',
      actor: '[actor turn]',
      fn: '[function named]',
      n: 'NaN',
      big: '10n',
      when: '1970-01-01T00:00:00.000Z',
      err: { name: 'Error', message: 'bad' },
      bytes: '[Uint8Array of 4 bytes]',
      map: { k: 1 },
      set: [1],
    });
    expect(sanitize(revoked.proxy)).toBe('[unreadable]');
    const original = { apiKey: 'k', s: 'x'.repeat(5_000) };
    sanitize(original);
    expect(original.apiKey).toBe('k');
    expect(original.s).toHaveLength(5_000);
  });
});
