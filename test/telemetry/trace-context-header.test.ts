import { describe, expect, it } from 'vitest';
import { traceIdOf, traceParentFromHeader, traceParentSchema } from '../../src/protocol/trace-context.js';
import { newTraceParent } from '../../src/runtime/trace-root.js';
import { CALLER_TRACE_PARENT } from '../support/turn-span-log.js';

/** Issue 27: what a `traceparent` header is read as (W3C Trace Context), and the root a turn gets without one. */
describe('the traceparent a caller sends (W3C Trace Context)', () => {
  it('takes a version-00 traceparent as it is', () => {
    expect(traceParentFromHeader(CALLER_TRACE_PARENT)).toBe(CALLER_TRACE_PARENT);
    expect(traceParentFromHeader('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00');
    expect(traceIdOf(CALLER_TRACE_PARENT)).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['uppercase hex', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01'],
    ['an all-zero trace id', '00-00000000000000000000000000000000-00f067aa0ba902b7-01'],
    ['an all-zero parent id', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'],
    ['version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
    ['a short trace id', '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01'],
    ['version 00 with more after it', `${CALLER_TRACE_PARENT}-extra`],
    ['two headers joined', `${CALLER_TRACE_PARENT}, ${CALLER_TRACE_PARENT}`],
    ['surrounding text', ` ${CALLER_TRACE_PARENT}`],
    ['far too long', `01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-${'a'.repeat(600)}`],
  ])('ignores a header that is %s', (_, header) => {
    expect(traceParentFromHeader(header)).toBeUndefined();
  });

  it('reads a later version by version 00\'s fields, dropping what follows them', () => {
    expect(traceParentFromHeader('cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-adds')).toBe(CALLER_TRACE_PARENT);
    expect(traceParentFromHeader('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBe(CALLER_TRACE_PARENT);
    expect(traceParentFromHeader('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x')).toBeUndefined();
  });

  it('a command takes only the version-00 form', () => {
    expect(traceParentSchema.safeParse(CALLER_TRACE_PARENT).success).toBe(true);
    expect(traceParentSchema.safeParse('cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01').success).toBe(false);
  });

  it('a synthetic root is a valid, sampled version-00 traceparent with fresh ids each time', () => {
    const roots = Array.from({ length: 50 }, () => newTraceParent());
    for (const root of roots) {
      expect(traceParentSchema.safeParse(root).success).toBe(true);
      expect(root.endsWith('-01')).toBe(true);
    }
    expect(new Set(roots.map(traceIdOf)).size).toBe(roots.length);
  });
});
