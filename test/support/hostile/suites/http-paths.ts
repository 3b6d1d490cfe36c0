import fc from 'fast-check';
import type { HostileHost } from '../hostile-host.js';
import type { Operation } from '../http-request.js';
import { encodedJunk, pathOf, pathSegment } from '../http-values.js';
import { describeHttpSuite, jsonRequest, wellFormedBody } from '../http-suite.js';
import type { Size } from '../budget.js';

/**
 * Path parameters on every route: URL-encoded garbage, `..` and its encodings, NUL as `%00`,
 * broken percent-escapes and invalid UTF-8, very long ids, unicode, prototype names — mixed with
 * live ids so one hostile segment sits beside real ones; bodies are valid. Routes without
 * parameters get junk segments appended, and junk replaces their fixed segments too.
 */
export function describeHttpPaths(size: Size, file: string): void {
  describeHttpSuite({ name: 'http paths', file, size, seed: 9_002, request: (h, op) => pathRequest(h, op) });
}

function pathRequest(h: HostileHost, op: Operation) {
  return fc
    .record({
      path: fc.oneof({ weight: 4, arbitrary: pathOf(op, (name) => pathSegment(h.ids[name] ?? name, h.known, 3)) }, { weight: 1, arbitrary: mangled(op) }),
      body: wellFormedBody(h, op),
    })
    .map(({ path, body }) => jsonRequest(h, op, path, body));
}

/** The route's path with one of its fixed segments replaced by junk, or junk appended. */
function mangled(op: Operation) {
  const segments = op.template.split('/').slice(1);
  return fc.tuple(fc.nat(segments.length), encodedJunk).map(([at, junk]) => {
    const copy = segments.map((s) => s.replace(/\{\w+\}/, 'x'));
    if (at === copy.length) copy.push(junk);
    else copy[at] = junk;
    return `/${copy.join('/')}`;
  });
}
