import { Subscription } from 'rxjs';
import type { SessionHandle } from '../runtime/session-handle.js';
import type { UpdateEnvelope } from '../protocol/updates.js';

export interface SseOptions {
  /** A comment line this often keeps proxies from closing a quiet stream. */
  heartbeatMs: number;
  /** Bytes a client may fall behind by before it is disconnected (it resumes with its last id). */
  bufferBytes: number;
}

export const DEFAULT_SSE_OPTIONS: SseOptions = { heartbeatMs: 15_000, bufferBytes: 4 * 1024 * 1024 };

const encoder = new TextEncoder();

/**
 * A session's updates as Server-Sent Events. Each envelope is one event, `id:` its sequence. A
 * client that resumes (`after`) gets what it missed from the replay ring, or — when that range has
 * left the ring or was issued before this host opened the session — an `event: snapshot_required`
 * carrying the snapshot, never a silent empty replay. A new client starts with `event: snapshot`.
 *
 * The stream's queue is the client's buffer: the server reads from it only as fast as the socket
 * drains, and a client that lets it pass `bufferBytes` is cut off, so it never holds up the session
 * or the other subscribers. Closing the connection only unsubscribes; the run goes on.
 */
export function sessionEventStream(
  session: SessionHandle,
  after: number | null,
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
        const subscription = new Subscription();
        const heartbeat = setInterval(() => push(': heartbeat\n\n'), options.heartbeatMs);
        const stop = () => {
          open = false;
          clearInterval(heartbeat);
          subscription.unsubscribe();
        };
        // Behind means the backlog already passed the limit: one large event for a client that is caught up goes out.
        const push = (text: string): void => {
          if (!open) return;
          if ((controller.desiredSize ?? 0) >= 0) return controller.enqueue(encoder.encode(text));
          stop();
          if (disconnect) disconnect();
          else controller.error(new Error('the client fell too far behind'));
        };
        const send = (envelope: UpdateEnvelope): void => {
          if (envelope.sequence <= lastSent) return;
          lastSent = envelope.sequence;
          push(`id: ${envelope.sequence}\ndata: ${JSON.stringify(envelope)}\n\n`);
        };
        const snapshot = (event: 'snapshot' | 'snapshot_required') => {
          const current = session.snapshot();
          lastSent = current.lastUpdateSequence;
          push(`event: ${event}\nid: ${current.lastUpdateSequence}\ndata: ${JSON.stringify(current)}\n\n`);
        };
        // Subscribed before the replay is read, in the same tick: nothing can fall between the two.
        subscription.add(
          session.updates$.subscribe({
            next: send,
            complete: () => {
              if (!open) return;
              stop();
              controller.close();
            },
          }),
        );
        cleanup = stop;
        push('retry: 1000\n\n');
        if (after === null) return snapshot('snapshot');
        const replay = session.replayUpdates(after);
        if (!replay.ok) return snapshot('snapshot_required');
        lastSent = after;
        for (const envelope of replay.updates) send(envelope);
      },
      cancel() {
        cleanup();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: options.bufferBytes }),
  );
}
