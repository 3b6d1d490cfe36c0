import { ROOT_CONTEXT, trace, type Context, type SpanContext } from '@opentelemetry/api';

/**
 * Issue 27: a W3C `traceparent` read into an OpenTelemetry context whose span is the remote parent.
 * Parsed here rather than with `@opentelemetry/core`'s propagator: core is only a transitive
 * dependency of the optional SDK, and the exporter must work with any SDK an embedder installs.
 * Version 00's layout; a later version is read by its first four fields, as W3C has a receiver do;
 * `ff`, ids of all zeros and anything else malformed give no parent.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

export function remoteParentContext(traceParent: string): Context | null {
  const spanContext = remoteSpanContext(traceParent);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : null;
}

function remoteSpanContext(traceParent: string): SpanContext | null {
  const match = TRACEPARENT.exec(traceParent.trim());
  if (!match) return null;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
}

/** A span's context as a version-00 `traceparent`: what another process needs to continue its trace. */
export function traceParentOf(spanContext: SpanContext): string {
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}
