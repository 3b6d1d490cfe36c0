import type { SessionStorage, SpanEnd, SpanWrite } from '../../storage/session-storage.js';
import type { TraceSpan } from '../protocol/trace.js';

/**
 * How long signals gather before a batch is written. On PostgreSQL a batch is a round trip whatever
 * its size; a window of a few tens of milliseconds puts the spans of many quick steps into one batch
 * (and, with `coalesce`, a span started and ended within it into one row), and is too short for a
 * person watching a trace to notice. Spans are signals: a crash loses at most this window's worth,
 * and restart correction settles the spans it left running.
 */
export const TRACE_BATCH_MS = 50;

/**
 * Trace spans as a side channel (RT-26): signals go into a bounded queue that a background drain
 * writes in batches — one storage call per batch, at most one call in flight, the next one a window
 * after it (at once when the queue is half full). The loop never awaits it and never branches on
 * it; a full queue, a failing write or an end whose start was lost only increments `droppedSignals`.
 */
export class TraceRecorder {
  droppedSignals = 0;
  private queue: SpanWrite[] = [];
  private writing: Promise<void> | null = null;
  private window: NodeJS.Timeout | null = null;

  constructor(
    private readonly storage: SessionStorage,
    private readonly capacity = 1_024,
    private readonly batchMs = TRACE_BATCH_MS,
  ) {}

  start(span: TraceSpan): void {
    this.enqueue({ type: 'start', span });
  }

  end(spanId: string, end: SpanEnd): void {
    this.enqueue({ type: 'end', spanId, end });
  }

  /** Resolves once everything queued so far has been written or dropped; a pending window is cut short. */
  async flush(): Promise<void> {
    while (this.writing || this.queue.length > 0) {
      if (!this.writing) this.writeNow();
      await this.writing;
    }
  }

  private enqueue(write: SpanWrite): void {
    if (this.queue.length >= this.capacity) {
      this.droppedSignals += 1;
      return;
    }
    this.queue.push(write);
    this.schedule();
  }

  /** The next batch goes after the window, or at once when the queue is half full; never beside one being written. */
  private schedule(): void {
    if (this.writing || this.queue.length === 0) return;
    if (this.queue.length * 2 >= this.capacity) this.writeNow();
    // A window is no reason to keep the process alive: an embedder that exits without shutdown() loses only signals.
    else this.window ??= setTimeout(() => this.writeNow(), this.batchMs).unref();
  }

  private writeNow(): void {
    if (this.window) clearTimeout(this.window);
    this.window = null;
    if (this.writing || this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.writing = this.write(batch).finally(() => {
      this.writing = null;
      this.schedule();
    });
  }

  private async write(batch: SpanWrite[]): Promise<void> {
    try {
      const { unmatchedEnds } = await this.storage.writeSpans(coalesce(batch));
      this.droppedSignals += unmatchedEnds;
    } catch {
      this.droppedSignals += batch.length;
    }
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
