import fc from 'fast-check';
import type { HostileHost } from '../hostile-host.js';
import type { Operation } from '../http-request.js';
import { livePath, queryOf } from '../http-values.js';
import { describeHttpSuite, jsonRequest, wellFormedBody } from '../http-suite.js';
import type { Size } from '../budget.js';

/**
 * Query strings on every route: `limit`, `cursor`, `after` and `wait` well-formed, absent, repeated
 * or junk (negative, fractional, exponents, NaN, huge, hex, padded, broken escapes, forged
 * cursors), and undeclared parameters besides; paths and bodies are valid.
 */
export function describeHttpQueries(size: Size, file: string): void {
  describeHttpSuite({ name: 'http queries', file, size, seed: 9_003, request: (h, op) => queryRequest(h, op) });
}

/** Cursors this host never gave out, but shaped like its own (base64url JSON of `[createdAtMs, id]`). */
const forgedCursor = fc
  .tuple(
    fc.oneof({ weight: 3, arbitrary: fc.integer() }, { weight: 1, arbitrary: fc.constantFrom(1e308, -0, 2 ** 53, 'x', null) }),
    fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('\0', 'a\0b', '\uD800', 'x'.repeat(200), 'x'.repeat(201), '', '__proto__')),
  )
  .map((pair) => Buffer.from(JSON.stringify(pair), 'utf8').toString('base64url'));

function queryRequest(h: HostileHost, op: Operation) {
  return fc
    .record({
      path: livePath(op, h.ids),
      query: op.query.some((q) => q.name === 'cursor') ? fc.oneof(queryOf(op, h.context, 2), forgedCursor.map((c) => `?cursor=${c}`)) : queryOf(op, h.context, 2),
      body: wellFormedBody(h, op),
    })
    .map(({ path, query, body }) => jsonRequest(h, op, path + query, body));
}
