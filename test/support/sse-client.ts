/** One Server-Sent Event as the client parsed it. */
export interface SseEvent {
  event: string;
  id: string | null;
  data: string;
}

export interface Envelope {
  sequence: number;
  turnId: string;
  update: { type: string } & Record<string, unknown>;
}

/**
 * A small SSE reader over `fetch`, for tests: it parses the stream as a browser's EventSource would
 * (fields `event`, `id`, `data`, comments ignored) and keeps every event.
 */
export class SseClient {
  readonly events: SseEvent[] = [];
  /** The update envelopes (events without a name), parsed once as they arrive. */
  readonly updates: Envelope[] = [];
  readonly comments: string[] = [];
  readonly status: number;
  /** Resolves when the server ends the stream (or the connection drops). */
  readonly ended: Promise<void>;
  private readonly waiters: { test: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void }[] = [];
  private readonly commentWaiters: (() => void)[] = [];
  private readonly updateWaiters: { test: (u: Envelope) => boolean; resolve: (u: Envelope) => void }[] = [];
  private readonly controller: AbortController;

  private constructor(response: Response, controller: AbortController) {
    this.status = response.status;
    this.controller = controller;
    this.ended = this.read(response.body!).catch(() => undefined);
  }

  static async connect(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const controller = new AbortController();
    const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
    return new SseClient(response, controller);
  }


  /** The first event (already received or still to come) that passes `test`. */
  next(test: (e: SseEvent) => boolean): Promise<SseEvent> {
    const seen = this.events.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.waiters.push({ test, resolve }));
  }

  /** The `nth` update of the given type after sequence `after` (received or to come). */
  nextUpdate(type: string, after = 0, nth = 1): Promise<Envelope> {
    let count = 0;
    const test = (u: Envelope) => u.update.type === type && u.sequence > after && ++count === nth;
    const seen = this.updates.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.updateWaiters.push({ test, resolve }));
  }

  /** Resolves once `count` comment lines have arrived. */
  async comment(count: number): Promise<void> {
    while (this.comments.length < count) await new Promise<void>((resolve) => this.commentWaiters.push(resolve));
  }

  close(): void {
    this.controller.abort();
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        this.dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  private dispatch(block: string): void {
    let event = 'message';
    let id: string | null = null;
    const data: string[] = [];
    let fields = 0;
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        this.comments.push(line.slice(1).trim());
        for (const resolve of this.commentWaiters.splice(0)) resolve();
        continue;
      }
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      fields += 1;
      if (name === 'event') event = value;
      else if (name === 'id') id = value;
      else if (name === 'data') data.push(value);
      else fields -= 1;
    }
    if (fields === 0 || data.length === 0) return;
    const parsed: SseEvent = { event, id, data: data.join('\n') };
    this.events.push(parsed);
    if (event === 'message') this.deliverUpdate(JSON.parse(parsed.data) as Envelope);
    for (const waiter of [...this.waiters]) {
      if (!waiter.test(parsed)) continue;
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve(parsed);
    }
  }

  private deliverUpdate(envelope: Envelope): void {
    this.updates.push(envelope);
    for (const waiter of [...this.updateWaiters]) {
      if (!waiter.test(envelope)) continue;
      this.updateWaiters.splice(this.updateWaiters.indexOf(waiter), 1);
      waiter.resolve(envelope);
    }
  }
}
