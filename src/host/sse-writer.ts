import type { SseOptions } from './sse-stream.js';

const encoder = new TextEncoder();

/** What a stream's producer is given: write one SSE frame, or end the stream. */
export interface SseSink {
  write(text: string): void;
  close(): void;
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'transfer-encoding': 'chunked',
  'x-accel-buffering': 'no',
} as const;

/** One SSE frame: an optional event name and id, and the data (one line of JSON). */
export function sseFrame(data: string, event?: string, id?: number | string): string {
  return `${event ? `event: ${event}\n` : ''}${id !== undefined ? `id: ${id}\n` : ''}data: ${data}\n\n`;
}

/**
 * A Server-Sent Events body with the event route's rules: a heartbeat comment, and a client that
 * falls `bufferBytes` behind is cut off (it reconnects with its last id) instead of holding
 * anything up. `start` returns what to undo when the client goes away.
 */
export function sseBody(options: SseOptions, disconnect: (() => void) | undefined, start: (sink: SseSink) => () => void): ReadableStream<Uint8Array> {
  let cleanup = (): void => undefined;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        let open = true;
        let undo = (): void => undefined;
        const heartbeat = setInterval(() => sink.write(': heartbeat\n\n'), options.heartbeatMs);
        const stop = (): void => {
          if (!open) return;
          open = false;
          clearInterval(heartbeat);
          undo();
        };
        const sink: SseSink = {
          write(text) {
            if (!open) return;
            if ((controller.desiredSize ?? 0) >= 0) return controller.enqueue(encoder.encode(text));
            stop();
            options.lagged?.();
            if (disconnect) disconnect();
            else controller.error(new Error('the client fell too far behind'));
          },
          close() {
            if (!open) return;
            stop();
            controller.close();
          },
        };
        cleanup = stop;
        sink.write('retry: 1000\n\n');
        undo = start(sink);
        if (!open) undo();
      },
      cancel() {
        cleanup();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: options.bufferBytes }),
  );
}
