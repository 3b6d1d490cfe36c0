import fc from 'fast-check';
import type { HostileHost } from '../hostile-host.js';
import type { Operation } from '../http-request.js';
import { bodyOf, CONTENT_TYPES, livePath, queryOf } from '../http-values.js';
import { describeHttpSuite } from '../http-suite.js';
import type { Size } from '../budget.js';

/**
 * Bodies on every route — valid, valid but for one value, garbage JSON, no JSON, raw bytes,
 * streamed without a length, nested as deep as 1 MiB allows, past 1 MiB — under content types
 * sensible and not; paths and queries are well-formed so the body is what the route reads.
 */
export function describeHttpBodies(size: Size, file: string): void {
  describeHttpSuite({ name: 'http bodies', file, size, seed: 9_001, request: (h, op) => bodyRequest(h, op) });
}

function bodyRequest(h: HostileHost, op: Operation) {
  return fc
    .record({
      path: livePath(op, h.ids),
      query: queryOf(op, h.context, 0),
      body: bodyOf(op, h.context),
      contentType: fc.option(fc.constantFrom(...CONTENT_TYPES), { freq: 8 }),
    })
    .map(({ path, query, body, contentType }) => ({
      method: op.method,
      path: path + query,
      headers: [...(contentType === null ? [] : ([['content-type', contentType]] as [string, string][])), ...h.auth],
      // fetch sends no body with GET.
      ...(body && op.method !== 'GET' && { body }),
    }));
}
