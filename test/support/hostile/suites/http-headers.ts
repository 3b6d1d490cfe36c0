import fc from 'fast-check';
import type { HostileHost } from '../hostile-host.js';
import type { HttpAnswer, HttpRequest, Operation } from '../http-request.js';
import { CONTENT_TYPES, livePath } from '../http-values.js';
import { describeHttpSuite, wellFormedBody } from '../http-suite.js';
import { codeOf } from '../verdict.js';
import type { Size } from '../budget.js';

const TOKEN = 's3cret-token';

/**
 * Headers on every route of a host that requires a token: `Authorization` right, wrong, malformed,
 * repeated; odd and repeated `Content-Type`; `Last-Event-ID` junk; other headers with odd values,
 * `Origin` among them. Beyond being typed, an answer must be 401 exactly when the one right token
 * was not sent, and, with it, 403 exactly when a command carried an `Origin`. (`Host` is not
 * among them: fetch sends its own. test/hostile/dns-rebinding.test.ts sends hostile ones.)
 */
export function describeHttpHeaders(size: Size, file: string): void {
  describeHttpSuite({
    name: 'http headers',
    file,
    size,
    seed: 9_004,
    token: TOKEN,
    request: (h, op) => headerRequest(h, op),
    check: (h, request, answer) => authorization(h, request, answer) ?? origin(request, answer),
  });
}

/** Header values fetch will send: Latin-1 without control characters, which it refuses. */
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f).map((c) => String.fromCharCode(c)), maxLength: 80 }),
  fc.constantFrom('', 'x'.repeat(8_000), '\u00ff\u00fe', '%00', '__proto__', '-1', '1e308', 'NaN', '99999999999999999999', ' 5 ', '5, 6'),
);

const AUTHORIZATIONS = [`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER ${TOKEN}`, `Bearer  ${TOKEN}`, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN, 'Bearer', 'Bearer ', `Bearer ${TOKEN}, Bearer ${TOKEN}`, 'Bearer ' + 'x'.repeat(5_000)];

const HEADER_NAMES = ['accept', 'accept-encoding', 'accept-language', 'origin', 'referer', 'cookie', 'x-forwarded-for', 'x-request-id', 'if-none-match', 'cache-control', 'pragma', 'range', 'user-agent', 'x-http-method-override', '__proto__', 'constructor'];

const headers = fc.record({
  authorization: fc.oneof({ weight: 3, arbitrary: fc.constant([`Bearer ${TOKEN}`]) }, { weight: 2, arbitrary: fc.array(fc.oneof(fc.constantFrom(...AUTHORIZATIONS), headerValue), { maxLength: 2 }) }) as fc.Arbitrary<string[]>,
  contentType: fc.array(fc.constantFrom(...CONTENT_TYPES), { maxLength: 2 }),
  lastEventId: fc.array(headerValue, { maxLength: 2 }),
  others: fc.array(fc.tuple(fc.constantFrom(...HEADER_NAMES), headerValue), { maxLength: 4 }),
});

function headerRequest(h: HostileHost, op: Operation): fc.Arbitrary<HttpRequest> {
  return fc
    .record({
      path: livePath(op, h.ids),
      headers,
      body: wellFormedBody(h, op),
    })
    .map(({ path, headers: { authorization, contentType, lastEventId, others }, body }) => ({
      method: op.method,
      path,
      headers: [
        ...authorization.map((v): [string, string] => ['authorization', v]),
        ...contentType.map((v): [string, string] => ['content-type', v]),
        ...lastEventId.map((v): [string, string] => ['last-event-id', v]),
        ...others,
      ],
      ...(body !== null && { body: { text: body } }),
    }));
}

/**
 * 401 `Unauthorized` exactly when the request did not carry the one right token (fetch trims and
 * joins repeated headers) — unless the headers were too large to parse at all (431).
 */
function authorization(_h: HostileHost, request: HttpRequest, answer: HttpAnswer): string | null {
  if (answer.status === 431) return null;
  const sent = request.headers.filter(([name]) => name === 'authorization').map(([, value]) => value.trim());
  const right = sent.length === 1 && /^Bearer (.+)$/i.exec(sent[0]!)?.[1] === TOKEN;
  const refused = answer.status === 401 && codeOf(answer) === 'Unauthorized';
  if (request.path === '/healthz') return answer.status === 401 ? 'the health check asked for a token' : null;
  if (right && answer.status === 401) return 'the right token was refused';
  if (!right && !refused) return `no right token, yet answered ${answer.status}`;
  return null;
}

/**
 * With the right token, a request that is not a read and carries an `Origin` is refused 403
 * `ForbiddenOrigin`, whatever else is wrong with it: none of the generated values is this host's
 * own origin (`http://127.0.0.1:PORT`), and fetch sends none by itself. Nothing else is refused so.
 */
function origin(request: HttpRequest, answer: HttpAnswer): string | null {
  if (answer.status === 431 || answer.status === 401) return null;
  const command = request.method !== 'GET' && request.method !== 'HEAD';
  const sent = request.headers.some(([name]) => name === 'origin');
  const refused = answer.status === 403 && codeOf(answer) === 'ForbiddenOrigin';
  if (command && sent && !refused) return `a command with a foreign Origin, yet answered ${answer.status}`;
  if (!(command && sent) && answer.status === 403) return 'refused for an Origin it did not send';
  return null;
}
