import fc from 'fast-check';
import { STORAGE_METHODS } from '../../../../storage/faulty-storage.js';
import type { HostileHost } from '../hostile-host.js';
import type { HttpRequest, Operation } from '../http-request.js';
import { livePath, queryOf } from '../http-values.js';
import { describeHttpSuite, jsonRequest, wellFormedBody } from '../http-suite.js';
import type { Size } from '../budget.js';

/**
 * Every route while storage fails for the length of the request — all of it, some methods, or one:
 * requests are well-formed or nearly (they must reach storage to meet the fault), and the only
 * 5xx allowed is a 503 `StorageUnavailable` or `PersistenceError`. Storage heals between
 * requests; afterwards the session completes a normal turn.
 */
export function describeHttpStorageFaults(size: Size, file: string): void {
  describeHttpSuite({
    name: 'http storage faults',
    file,
    size,
    seed: 9_006,
    faults: fc.oneof(fc.constant([]), fc.constant(STORAGE_METHODS), fc.subarray([...STORAGE_METHODS]), fc.constantFrom(...STORAGE_METHODS).map((m) => [m])),
    request: (h, op) => wellFormed(h, op),
  });
}

function wellFormed(h: HostileHost, op: Operation): fc.Arbitrary<HttpRequest> {
  return fc
    .record({
      path: livePath(op, h.ids),
      query: queryOf(op, h.context, 0),
      body: wellFormedBody(h, op),
    })
    .map(({ path, query, body }) => jsonRequest(h, op, path + query, body));
}
