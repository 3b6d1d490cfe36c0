import { randomBytes } from 'node:crypto';

const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_PARENT_ID = '0'.repeat(16);

/**
 * Issue 27: the parent of a turn started without a caller's `traceparent`: a new trace id and a
 * parent id no span has (a synthetic root), sampled (`01`). It is made as the turn is accepted and
 * stored with the turn's row, so the part of the turn resumed on another host (issue 26) is a span
 * of the same trace. W3C forbids all-zero ids: the improbable draw is made again.
 */
export function newTraceParent(): string {
  let traceId = ZERO_TRACE_ID;
  while (traceId === ZERO_TRACE_ID) traceId = randomBytes(16).toString('hex');
  let parentId = ZERO_PARENT_ID;
  while (parentId === ZERO_PARENT_ID) parentId = randomBytes(8).toString('hex');
  return `00-${traceId}-${parentId}-01`;
}
