import type { Runtime } from '../../src/index.js';
import type { SpanFacts, TraceSpan } from '../../src/protocol/trace.js';

/**
 * Issue 27: the turn spans a runtime starts, with the facts they start with, as a span observer
 * (`runtime.observeSpans`) sees them. `started(id)` resolves once the span of that id has started
 * (`turn:<turnId>`, or `turn:<turnId>:resumed` for the part resumed after its host went away).
 */
export class TurnSpanLog {
  readonly starts: { id: string; turnId: string; facts: SpanFacts }[] = [];
  private readonly waiting = new Map<string, ((facts: SpanFacts) => void)[]>();
  private readonly stop: () => void;

  constructor(runtime: Runtime) {
    this.stop = runtime.observeSpans({ started: (span) => this.record(span), ended: () => undefined });
  }

  /** The facts the span `spanId` started with, once it has. */
  started(spanId: string): Promise<SpanFacts> {
    const known = this.starts.find((s) => s.id === spanId);
    if (known) return Promise.resolve(known.facts);
    return new Promise((resolve) => this.waiting.set(spanId, [...(this.waiting.get(spanId) ?? []), resolve]));
  }

  close(): void {
    this.stop();
  }

  private record(span: TraceSpan): void {
    if (span.kind !== 'turn') return;
    // The observer must not keep the span object: its facts are copied.
    const facts = { ...span.facts };
    this.starts.push({ id: span.id, turnId: span.turnId, facts });
    for (const resolve of this.waiting.get(span.id) ?? []) resolve(facts);
    this.waiting.delete(span.id);
  }
}

/** A caller's W3C traceparent, as a tracing client sends it. */
export const CALLER_TRACE_PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
