import type { UpdateEnvelope } from '../protocol/updates.js';
import type { UpdateFeed } from './session-access.js';

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
        let open = true;
        let lastSent = -1;
        let unsubscribe = (): void => undefined;
        const heartbeat = setInterval(() => push(': heartbeat\n\n'), options.heartbeatMs);
        // Frames written by one task and the microtasks it sets off, sent as one chunk (see `flush`).
        let pending = '';
        let flushing = false;
        const stop = () => {
          open = false;
          clearInterval(heartbeat);
          pending = '';
          unsubscribe();
        };
        /**
         * A step's updates come in bursts (its deltas, its message, the tool call's start) spread
         * over the microtasks of one task, and each chunk costs two web streams' promise-driven
         * reads, an `encode` and a `ServerResponse.write` with its chunk framing: the frames of
         * one task and its microtasks go out as one chunk when the next-tick queue runs. In the
         * HTTP bench that is 5 chunks per turn instead of 34 and about a tenth less of the host's
         * CPU per turn (bench/README.md). Node writes the chunk to the socket at its next tick,
         * as it does every response's writes.
         */
        const flush = (): void => {
          flushing = false;
          if (!open || pending === '') return;
          const text = pending;
          pending = '';
          controller.enqueue(encoder.encode(text));
        };
        // Behind means the backlog already passed the limit: one large event for a client that is caught up goes out.
        const push = (text: string): void => {
          if (!open) return;
          if ((controller.desiredSize ?? 0) >= 0) {
            pending += text;
            if (!flushing) {
              flushing = true;
              process.nextTick(flush);
            }
            return;
          }
          stop();
          options.lagged?.();
          if (disconnect) disconnect();
          else controller.error(new Error('the client fell too far behind'));
        };
        const send = (envelope: UpdateEnvelope): void => {
          if (envelope.sequence <= lastSent) return;
          lastSent = envelope.sequence;
          push(`id: ${envelope.sequence}\ndata: ${JSON.stringify(envelope)}\n\n`);
        };
        cleanup = stop;
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
            controller.close();
          },
        });
        if (!open) unsubscribe();
      },
      cancel() {
        cleanup();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: options.bufferBytes }),
  );
}
