import { z } from 'zod';

/**
 * Issue 27: W3C Trace Context (https://www.w3.org/TR/trace-context/), the `traceparent` a caller
 * sends so that the turn it starts is a span of the caller's trace. turnchart keeps the one form
 * it understands, version `00`: `00-<trace-id>-<parent-id>-<trace-flags>`, lowercase hex, neither
 * id all zeros.
 */

const VERSION_00 = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * A version this specification does not know (any but `00`, which must be exactly that, and `ff`, which is invalid) is read as version 00
 * when its first fields have version 00's layout and anything after them follows a `-`: the
 * spec's rule for a receiver meeting a later version. What follows is dropped.
 */
const LATER_VERSION = /^(?!ff|00)[0-9a-f]{2}-((?!0{32})[0-9a-f]{32})-((?!0{16})[0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/s;

/** A header longer than this is nobody's traceparent (version 00 is 55 characters); it is not even read. */
const MAX_HEADER_CHARS = 512;

/** The version-00 `traceparent` a turn carries: in commands (`traceParent` of a start-turn), stored with its row, in its span's facts. */
export const traceParentSchema = z.string().regex(VERSION_00, 'a W3C traceparent, version 00: 00-<32 hex>-<16 hex>-<2 hex>, lowercase, ids not all zero');

/**
 * The turn's parent from a `traceparent` header, in version-00 form; undefined when the header is
 * absent or invalid. W3C has a receiver ignore a traceparent it cannot parse (and start a trace of
 * its own) rather than refuse the request: a caller's broken tracing never costs it its turn.
 */
export function traceParentFromHeader(header: string | undefined): string | undefined {
  if (header === undefined || header.length > MAX_HEADER_CHARS) return undefined;
  if (traceParentSchema.safeParse(header).success) return header;
  const later = LATER_VERSION.exec(header);
  return later ? `00-${later[1]}-${later[2]}-${later[3]}` : undefined;
}

/** The trace id of a version-00 traceparent: the turns and callers that share it are one trace. */
export function traceIdOf(traceParent: string): string {
  return traceParent.slice(3, 35);
}
