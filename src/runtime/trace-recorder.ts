import type { SessionStorage, SpanEnd } from '../../storage/session-storage.js';
import type { TraceSpan } from '../protocol/trace.js';

/**
 * Trace spans as a side channel (RT-26): signals go into a bounded queue drained in the
 * background. The loop never awaits it and never branches on it; a full queue or a failing
 * write only increments `droppedSignals`.
 */
export class TraceRecorder {
  droppedSignals = 0;
  private readonly queue: (() => Promise<void>)[] = [];
  private draining: Promise<void> | null = null;

  constructor(
    private readonly storage: SessionStorage,
    private readonly capacity = 1_024,
  ) {}

  start(span: TraceSpan): void {
    this.enqueue(() => this.storage.startSpan(span));
  }

  end(spanId: string, end: SpanEnd): void {
    this.enqueue(() => this.storage.endSpan(spanId, end));
  }

  /** Resolves once everything queued so far has been written or dropped. */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private enqueue(write: () => Promise<void>): void {
    if (this.queue.length >= this.capacity) {
      this.droppedSignals += 1;
      return;
    }
    this.queue.push(write);
    this.draining ??= this.drain();
  }

  private async drain(): Promise<void> {
    for (let write = this.queue.shift(); write; write = this.queue.shift()) {
      try {
        await write();
      } catch {
        this.droppedSignals += 1;
      }
    }
    this.draining = null;
  }
}
