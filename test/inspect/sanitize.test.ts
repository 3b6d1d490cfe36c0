import { describe, expect, it } from 'vitest';
import { isSecretKey, keySecrecy, redactedText, REDACTED, sanitize } from '../../src/inspect/sanitize.js';

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
    for (const key of ['inputTokens', 'maxOutputTokens', 'cachedInputTokens', 'reasoningTokens', 'keyCount', 'cacheKey', 'monkey', 'turnId', 'sessionId', 'author', 'authorize', 'passed', 'bypass']) expect(isSecretKey(key), key).toBe(false);
  });

  it('redacts the keys the probe found in clear (finding 7): pwd, pass, key, tokens, api_keys, dsn — strings only where the key is ambiguous', () => {
    for (const key of ['pwd', 'dsn', 'sentryDsn', 'api_keys', 'apiKeys', 'DB_PASSWORD', 'accesstoken', 'clientsecret', 'refreshTokens']) expect(keySecrecy(key), key).toBe('all');
    for (const key of ['key', 'keys', 'tokens', 'pass', 'db_pass', 'sshKey', 'stripeKey']) expect(keySecrecy(key), key).toBe('strings');
    const out = sanitize({
      pwd: 1234,
      dsn: 'postgres://u:secret@h/db',
      api_keys: ['sk-1', 'sk-2'],
      // Ambiguous keys: their strings are secrets, their numbers and booleans are not.
      key: 'sk-live-1',
      keys: { primary: 'sk-2', count: 2 },
      tokens: 'ghp_abc',
      pass: 'hunter2',
      usage: { tokens: 1200, inputTokens: 5, outputTokens: 7, cachedInputTokens: 1, reasoningTokens: 0, maxOutputTokens: 9 },
      verdict: { pass: true },
      keyCount: 3,
    });
    expect(out).toEqual({
      pwd: REDACTED,
      dsn: REDACTED,
      api_keys: REDACTED,
      key: REDACTED,
      keys: { primary: REDACTED, count: 2 },
      tokens: REDACTED,
      pass: REDACTED,
      usage: { tokens: 1200, inputTokens: 5, outputTokens: 7, cachedInputTokens: 1, reasoningTokens: 0, maxOutputTokens: 9 },
      verdict: { pass: true },
      keyCount: 3,
    });
  });

  it('redacts inside any string: the loop detector’s signature, a URL’s password, assignments and header lines', () => {
    const args = '{"apiKey":"sk-live-abc","dsn":"postgres://u:secret@h/db","path":"a.txt","pwd":"hunter2","tokens":12}';
    const out = sanitize({ loop: { signature: `read_file:${args}`, count: 2 } }) as { loop: { signature: string } };
    expect(out.loop.signature).toBe('read_file:{"apiKey":"[redacted]","dsn":"[redacted]","path":"a.txt","pwd":"[redacted]","tokens":12}');
    const cases: [string, string][] = [
      ['postgres://u:secret@h/db', 'postgres://u:[redacted]@h/db'],
      ['clone https://x-access-token:ghp_1@github.com/o/r.git, then ssh://git@github.com/o/r', 'clone https://x-access-token:[redacted]@github.com/o/r.git, then ssh://git@github.com/o/r'],
      ['DATABASE_URL=postgres://app:pa/ss@db:5432/x', 'DATABASE_URL=postgres://app:[redacted]@db:5432/x'],
      ['https://h/x?api_key=K1&page=2&access_token=T2', 'https://h/x?api_key=[redacted]&page=2&access_token=[redacted]'],
      ['export OPENAI_API_KEY=sk-abc\nPORT=8080\ntokens=12\nDB_PASS="p w"', 'export OPENAI_API_KEY=[redacted]\nPORT=8080\ntokens=12\nDB_PASS="[redacted]"'],
      ['curl -H "Authorization: Bearer abc.def" https://h/x', 'curl -H "Authorization: [redacted]" https://h/x'],
      ['password: hunter2\nuser: bob', 'password: [redacted]\nuser: bob'],
      ["{ apiKey: 'sk-js', user: 'bob' }", "{ apiKey: '[redacted]', user: 'bob' }"],
      ['12\t  "password": "hunter2",\n', '12\t  "password": "[redacted]",\n'],
      ['failed: {"auth": {"user": "u", "password": "x"}, "n": 1}', 'failed: {"auth": "[redacted]", "n": 1}'],
      ['failed: {"keys": ["a", "b"], "tokens": 3}', 'failed: {"keys": ["[redacted]", "[redacted]"], "tokens": 3}'],
      // JSON inside a JSON string, as a logged request body holds it.
      ['sent {"body":"{\\"apiKey\\":\\"sk-esc\\",\\"n\\":1}"}', 'sent {"body":"{\\"apiKey\\":\\"[redacted]\\",\\"n\\":1}"}'],
      ['the author: Bob, monkey=banana, inputTokens: 5, a == b, x => y', 'the author: Bob, monkey=banana, inputTokens: 5, a == b, x => y'],
    ];
    for (const [text, redacted] of cases) {
      expect(redactedText(text), text).toBe(redacted);
      expect(sanitize(text, { ...limits, maxString: 10_000 }), text).toBe(redacted);
    }
  });

  it('judges what it keeps of a long string with what follows it: a secret cut at the limit does not leak its start', () => {
    const after = (n: number, tail: string) => `${'x'.repeat(n)} ${tail}`;
    // Cut inside the password: 'xxxxxxxx postgres://user:sup'.
    expect(sanitize(after(8, 'postgres://user:supersecretpassword@h/db'), { ...limits, maxString: 28 })).toMatch(/^x{8} postgres:\/\/user:\[re… \[\d+ more characters\]$/);
    expect(sanitize(after(5, 'password=supersecret and more'), { ...limits, maxString: 30 })).toMatch(/^x{5} password=\[redacted\] and … \[\d+ more characters\]$/);
    expect(sanitize(after(5, '"apiKey": "sk-live-0123456789"'), { ...limits, maxString: 20 })).toMatch(/^x{5} "apiKey": "\[re… \[\d+ more characters\]$/);
    expect(sanitize(`${'y'.repeat(100_000)} password=hunter2`)).toMatch(/^y{2000}… \[\d+ more characters\]$/);
  });

  it('scans hostile text in time linear in its length', () => {
    const pieces = ['"a":', '\\\\\\\\"', '\\":', '://u:', 'password=', '{"auth":[', '"key": "', 'x@', '"', ':', '=', 'token:"\\'];
    for (const piece of pieces) {
      const text = piece.repeat(Math.ceil(200_000 / piece.length));
      const started = performance.now();
      redactedText(text);
      // A quadratic scan of 200 000 characters takes minutes; a linear one, milliseconds.
      expect(performance.now() - started, JSON.stringify(piece)).toBeLessThan(2_000);
    }
  });

  it('redacts inside text that holds JSON, such as a tool call’s arguments', () => {
    const out = sanitize({ argumentsText: '{"path":"a","auth":{"password":"hunter2"}}', plain: '{not json', list: '[{"token":"t"}]' });
    expect(out).toEqual({ argumentsText: '{"path":"a","auth":"[redacted]"}', plain: '{not json', list: '[{"token":"[redacted]"}]' });
  });

  it('keeps a JSON text it met a moment ago as it kept it then, under the same limits only', () => {
    // Built anew each time: the same text as another string, as each step's events and contexts hold it.
    const args = () => ['{"path":"a.txt","apiKey":"sk-live-abc",', '"note":"', 'x'.repeat(30), '"}'].join('');
    const whole = sanitize({ argumentsText: args() });
    expect(whole).toEqual({ argumentsText: `{"path":"a.txt","apiKey":"[redacted]","note":"${'x'.repeat(30)}"}` });
    const short = { ...limits, maxString: 20, maxItems: 10 };
    const cut = sanitize({ argumentsText: args() }, short);
    expect(cut).toEqual({ argumentsText: '{"path":"a.txt","api… [58 more characters]' });
    for (let i = 0; i < 3; i += 1) {
      expect(sanitize({ argumentsText: args() })).toEqual(whole);
      expect(sanitize({ argumentsText: args() }, short)).toEqual(cut);
    }
    // Other texts in between push it out of the few kept; it is then parsed again, to the same result.
    for (let i = 0; i < 40; i += 1) sanitize({ argumentsText: `{"i":${i}}` });
    expect(sanitize({ argumentsText: args() })).toEqual(whole);
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
