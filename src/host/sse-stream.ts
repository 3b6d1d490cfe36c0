import type { ServerResponse } from 'node:http';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { UpdateFeed } from './session-access.js';
import { atWriteTime } from './write-batch.js';

export interface SseOptions {
  /** A comment line this often keeps proxies from closing a quiet stream. */
  heartbeatMs: number;
  /** Bytes a client may fall behind by before it is disconnected (it resumes with its last id). */
  bufferBytes: number;
  /** Told each time a client is cut off for falling behind (issue 27: counted by the host's metrics). */
  lagged?: () => void;
}

export const DEFAULT_SSE_OPTIONS: SseOptions = { heartbeatMs: 15_000, bufferBytes: 4 * 1024 * 1024 };

const encoder = new TextEncoder();

/** Where a session's event stream puts its frames: a web stream's queue, or Node's response itself. */
interface FrameSink {
  /** Bytes written that the client has not taken yet. */
  backlog(): number;
  write(text: string): void;
  /** The stream is over: what was written goes out, then the response ends. */
  end(): void;
  /** The client fell too far behind: its connection goes at once. */
  cutOff(): void;
}

/**
 * A session's updates as Server-Sent Events. Each envelope is one event, `id:` its sequence. A
 * client that resumes gets what it missed from the replay ring, or — when that range has left the
 * ring or was issued before the session's owner opened it — an `event: snapshot_required` carrying
 * the snapshot, never a silent empty replay; after a session changed hands, the snapshot as its new
 * owner opened it followed by every update since (`sse-resume.ts`). A new client starts with
 * `event: snapshot`. The feed says which (`start`); an update at or below what was sent is a
 * duplicate and is dropped.
 *
 * The stream's queue is the client's buffer: the server reads from it only as fast as the socket
 * drains, and a client that lets it pass `bufferBytes` is cut off, so it never holds up the session
 * or the other subscribers. Closing the connection only unsubscribes; the run goes on.
 */
export function sessionEventStream(
  feed: UpdateFeed,
  options: SseOptions,
  /** Drops the client's connection at once; without it the stream errors, which also ends the response. */
  disconnect?: () => void,
): ReadableStream<Uint8Array> {
  let cleanup = (): void => undefined;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        cleanup = followFeed(feed, options, {
          // The queue's size: what is enqueued and not yet read by the connection.
          backlog: () => options.bufferBytes - (controller.desiredSize ?? 0),
          write: (text) => controller.enqueue(encoder.encode(text)),
          end: () => controller.close(),
          cutOff: () => (disconnect ? disconnect() : controller.error(new Error('the client fell too far behind'))),
        });
      },
      cancel() {
        cleanup();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: options.bufferBytes }),
  );
}

/**
 * The same events written straight to Node's response, its headers already written (issue 28).
 * Through `sessionEventStream` every chunk went through two web streams (the event stream and the
 * stream limit's wrapper), each read a chain of promises, then an `encode` and @hono/node-server's
 * read loop before `ServerResponse.write`; here a chunk is one `write` of the text. The client's
 * backlog is what the response and its socket hold unsent (`writableLength`): a client that stops
 * reading fills the network's buffers, then Node's, and is cut off past `bufferBytes` as before.
 * `closed` is called once, when the connection is gone — the stream ended, was cut off, or the
 * client left.
 */
export function writeSessionEvents(response: ServerResponse, feed: UpdateFeed, options: SseOptions, closed: () => void): void {
  // A client that left while the stream was being set up sends no `close` any more: the feed's subscription is taken and dropped.
  if (response.destroyed) {
    feed.subscribe({ update: () => undefined, end: () => undefined })();
    closed();
    return;
  }
  const stop = followFeed(feed, options, {
    backlog: () => response.writableLength,
    write: (text) => void response.write(text),
    end: () => response.end(),
    cutOff: () => response.destroy(),
  });
  response.once('close', () => {
    stop();
    closed();
  });
}

/**
 * The last envelope's frame. The clients following a session get each envelope one after another,
 * the same object, before the next one comes (the session's update stream hands it to every
 * subscriber in turn): one `JSON.stringify` per update, however many clients follow it.
 */
let lastEnvelope: UpdateEnvelope | null = null;
let lastFrame = '';

function frameOf(envelope: UpdateEnvelope): string {
  if (envelope !== lastEnvelope) {
    lastFrame = `id: ${envelope.sequence}\ndata: ${JSON.stringify(envelope)}\n\n`;
    lastEnvelope = envelope;
  }
  return lastFrame;
}

/** Writes the feed's start, then its updates, to `sink` until the feed ends; the function returned stops it. */
function followFeed(feed: UpdateFeed, options: SseOptions, sink: FrameSink): () => void {
  let open = true;
  let lastSent = -1;
  let unsubscribe = (): void => undefined;
  const heartbeat = setInterval(() => push(': heartbeat\n\n'), options.heartbeatMs);
  // Frames written by one task and the microtasks it sets off, sent as one chunk (see `flush`).
  let pending = '';
  let flushing = false;
  const stop = (): void => {
    if (!open) return;
    open = false;
    clearInterval(heartbeat);
    pending = '';
    unsubscribe();
  };
  /**
   * A step's updates come in bursts (its deltas, its message, the tool call's start) spread
   * over the microtasks of one task, and each chunk costs a write with its chunk framing (and, on
   * the web stream, its reads and an `encode`): the frames written meanwhile go out as one chunk,
   * with the host's other socket writes of that turn of the event loop (`atWriteTime`: in its
   * check phase, or at the end of a task once the first has waited 2 ms). In the HTTP bench that
   * is about 5 chunks per turn instead of 34 (bench/README.md). Node writes the chunk to the
   * socket at its next tick, as it does every response's writes.
   */
  const flush = (): void => {
    flushing = false;
    if (!open || pending === '') return;
    const text = pending;
    pending = '';
    sink.write(text);
  };
  // Behind means the backlog already passed the limit: one large event for a client that is caught up goes out.
  const push = (text: string): void => {
    if (!open) return;
    if (sink.backlog() <= options.bufferBytes) {
      pending += text;
      if (!flushing) {
        flushing = true;
        atWriteTime(flush);
      }
      return;
    }
    stop();
    options.lagged?.();
    sink.cutOff();
  };
  const send = (envelope: UpdateEnvelope): void => {
    if (envelope.sequence <= lastSent) return;
    lastSent = envelope.sequence;
    push(frameOf(envelope));
  };
  push('retry: 1000\n\n');
  const { start } = feed;
  if (start.kind === 'replay') {
    lastSent = start.after;
    for (const envelope of start.updates) send(envelope);
  } else {
    lastSent = start.snapshot.lastUpdateSequence;
    push(`event: ${start.kind}\nid: ${lastSent}\ndata: ${JSON.stringify(start.snapshot)}\n\n`);
    // A session that changed hands: the continuation since its new owner opened it (issue 26).
    if (start.kind === 'snapshot_required') for (const envelope of start.updates ?? []) send(envelope);
  }
  unsubscribe = feed.subscribe({
    update: send,
    end: () => {
      if (!open) return;
      // What is still waiting goes out before the end.
      flush();
      stop();
      sink.end();
    },
  });
  // Stopped while subscribing (the feed had ended already): `stop` called the no-op before this one.
  if (!open) unsubscribe();
  return stop;
}
