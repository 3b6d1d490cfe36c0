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

/** The trace queue's bound when the host sets none: at least this many signals… */
export const TRACE_QUEUE_CAPACITY = 1_024;
/** …and this many per open session (a tool step leaves about four: model and tool spans, each started and ended). */
export const TRACE_SIGNALS_PER_SESSION = 64;

/**
 * Trace spans as a side channel (RT-26): signals go into a bounded queue that a background drain
 * writes in batches — one storage call per batch, at most one call in flight, the next one a window
 * after it (at once when the queue is half full). The loop never awaits it and never branches on
 * it; a full queue, a failing write or an end whose start was lost only increments `droppedSignals`.
 *
 * With `perSession` set, the bound grows with the sessions the runtime holds open (`sessionsOpen`):
 * a thousand sessions starting their turns in the same tick used to overflow a fixed 1 024 before the
 * first batch could be written, losing about four signals in ten. The bound stays a bound: a fixed
 * number of signals per open session, never less than `capacity`.
 */
export class TraceRecorder {
  droppedSignals = 0;
  /** Span observers that threw (each throw is counted, and the span goes on to the others and to storage). */
  observerErrors = 0;
  private queue: SpanWrite[] = [];
  private readonly observers = new Set<SpanObserver>();
  private writing: Promise<void> | null = null;
  private window: NodeJS.Timeout | null = null;
  private limit: number;

  constructor(
    private readonly storage: SessionStorage,
    private readonly capacity = 1_024,
    private readonly batchMs = TRACE_BATCH_MS,
    private readonly perSession = 0,
  ) {
    this.limit = capacity;
  }

  /** How many sessions are open now; with `perSession` set, the queue's bound follows. */
  sessionsOpen(count: number): void {
    this.limit = Math.max(this.capacity, this.perSession * count);
  }

  start(span: TraceSpan): void {
    for (const observer of this.observers) this.tell(() => observer.started(span));
    this.enqueue({ type: 'start', span });
  }

  end(spanId: string, end: SpanEnd): void {
    for (const observer of this.observers) this.tell(() => observer.ended(spanId, end));
    this.enqueue({ type: 'end', spanId, end });
  }

  /**
   * Issue 27: an observer sees every span as it starts and ends, synchronously and before storage
   * does (a full queue drops the stored row, never the observed span). The OpenTelemetry exporter
   * and the metrics are observers, so stored spans and exported ones come from the same calls.
   */
  observe(observer: SpanObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /**
   * Whether an observer records content: the call sites gather `facts.content` only then, so a
   * runtime whose observers take none pays nothing for it.
   */
  get recordsContent(): boolean {
    for (const observer of this.observers) if (observer.recordsContent === true) return true;
    return false;
  }

  private tell(call: () => void): void {
    try {
      call();
    } catch {
      this.observerErrors += 1;
    }
  }

  /** Resolves once everything queued so far has been written or dropped; a pending window is cut short. */
  async flush(): Promise<void> {
    while (this.writing || this.queue.length > 0) {
      if (!this.writing) this.writeNow();
      await this.writing;
    }
  }

  private enqueue(write: SpanWrite): void {
    if (this.queue.length >= this.limit) {
      this.droppedSignals += 1;
      return;
    }
    this.queue.push(write);
    this.schedule();
  }

  /** The next batch goes after the window, or at once when the queue is half full; never beside one being written. */
  private schedule(): void {
    if (this.writing || this.queue.length === 0) return;
    if (this.queue.length * 2 >= this.limit) this.writeNow();
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

/** Sees spans as they start and end (issue 27). It must not keep the span object past its end: the recorder may change it. */
export interface SpanObserver {
  started(span: TraceSpan): void;
  ended(spanId: string, end: SpanEnd): void;
  /** The observer reads `facts.content` (model messages, tool arguments and results): the runtime gathers it only for such an observer. */
  readonly recordsContent?: boolean;
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
