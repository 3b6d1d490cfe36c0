import type { SessionStorage, SpanEnd, SpanWrite } from '../../storage/session-storage.js';
import type { TraceSpan } from '../protocol/trace.js';

/**
 * Trace spans as a side channel (RT-26): signals go into a bounded queue that a background drain
 * writes in batches — one storage call per batch, a span started and ended within one batch
 * written once. The loop never awaits it and never branches on it; a full queue, a failing write
 * or an end whose start was lost only increments `droppedSignals`.
 */
export class TraceRecorder {
  droppedSignals = 0;
  private queue: SpanWrite[] = [];
  private draining: Promise<void> | null = null;

  constructor(
    private readonly storage: SessionStorage,
    private readonly capacity = 1_024,
  ) {}

  start(span: TraceSpan): void {
    this.enqueue({ type: 'start', span });
  }

  end(spanId: string, end: SpanEnd): void {
    this.enqueue({ type: 'end', spanId, end });
  }

  /** Resolves once everything queued so far has been written or dropped. */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private enqueue(write: SpanWrite): void {
    if (this.queue.length >= this.capacity) {
      this.droppedSignals += 1;
      return;
    }
    this.queue.push(write);
    this.draining ??= this.drain();
  }

  private async drain(): Promise<void> {
    // Wait a macrotask so the signals of everything running now gather into one batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        const { unmatchedEnds } = await this.storage.writeSpans(coalesce(batch));
        this.droppedSignals += unmatchedEnds;
      } catch {
        this.droppedSignals += batch.length;
      }
    }
    this.draining = null;
  }
}

/** A start whose end is in the same batch becomes one finished span. */
function coalesce(batch: SpanWrite[]): SpanWrite[] {
  const starts = new Map<string, Extract<SpanWrite, { type: 'start' }>>();
  const out: SpanWrite[] = [];
  for (const write of batch) {
    if (write.type === 'start') {
      // The recorder owns the span objects it was handed, so a start can take its end in place.
      starts.set(write.span.id, write);
      out.push(write);
      continue;
    }
    const started = starts.get(write.spanId);
    if (started) {
      started.span.status = write.end.status;
      started.span.errorCode = write.end.errorCode;
      started.span.endedAtMs = write.end.endedAtMs;
    } else out.push(write);
  }
  return out;
}
