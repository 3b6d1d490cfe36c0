import { context, isSpanContextValid, trace } from '@opentelemetry/api';

/** The OpenTelemetry trace id of an open turn (the exporter's lookup); nothing when the turn has none. */
export type TraceIdOf = (turnId: string) => string | null | undefined;

/**
 * Issue 27: the fields that tie a log line to its trace, named as OpenTelemetry's log correlation
 * names them (`trace_id`, `span_id`, `trace_flags`: what @opentelemetry/instrumentation-pino
 * injects, and what collectors map onto a log record's trace context). A line about a turn takes
 * its turn's trace from the exporter; any other line the span active where it was written. Without
 * OpenTelemetry there is neither (no lookup, no active span): no fields, nothing else done.
 */
export function traceFields(fields: object, traceIdOf: TraceIdOf | undefined): Record<string, string> {
  const turnId = (fields as { turnId?: unknown }).turnId;
  if (traceIdOf && typeof turnId === 'string') {
    const traceId = traceIdOf(turnId);
    if (traceId) return { trace_id: traceId };
  }
  const span = trace.getSpan(context.active());
  const spanContext = span?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId, trace_flags: `0${spanContext.traceFlags.toString(16)}`.slice(-2) };
}
