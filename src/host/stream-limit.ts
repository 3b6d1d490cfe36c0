import type { Caller } from '../protocol/principal.js';
import { ApiError } from './errors.js';
import type { PrincipalQuotas } from './principal-quotas.js';
import { CAPACITY_RETRY_AFTER_MS } from './session-limit.js';

/** The default of `--max-streams`. */
export const DEFAULT_MAX_STREAMS = 1_000;

/**
 * The host's cap on concurrent streams (issue 22, finding 8): session event streams, the
 * inspector's streams and the AI SDK's response streams each hold a connection, a subscription
 * and up to a client's buffer of memory for as long as the client stays. Past the cap a new one
 * is refused with `503 TooManyStreams` and `Retry-After`, before anything is opened for it.
 * Issue 25: then the caller's own quota of streams, counted across hosts (`PrincipalQuotas`): past
 * it, `429 QuotaExceeded`. Admins are held only to the host's cap.
 */
export class StreamLimit {
  private held = 0;
  private cutOff = 0;

  constructor(
    readonly max: number,
    private readonly quotas: PrincipalQuotas,
  ) {}

  /** Streams open now (issue 27: the `turnchart_sse_clients` gauge). */
  get openStreams(): number {
    return this.held;
  }

  /** Clients cut off so far for falling too far behind (`SseOptions.lagged` tells of each). */
  get lagged(): number {
    return this.cutOff;
  }

  /** A stream's client fell too far behind and was cut off. */
  clientLagged(): void {
    this.cutOff += 1;
  }

  /**
   * A slot for a stream, claimed before anything is opened for it; the function returned gives it
   * back (once, whenever it is called). Past the host's cap `TooManyStreams`, past the caller's
   * quota `QuotaExceeded`.
   */
  async claim(caller: Caller): Promise<() => void> {
    if (this.held >= this.max) {
      throw new ApiError('TooManyStreams', `this host serves its limit of ${this.max} concurrent streams; try again later`, { retryAfterMs: CAPACITY_RETRY_AFTER_MS });
    }
    this.held += 1;
    let released = false;
    let releaseSlot: () => void = () => undefined;
    const release = () => {
      if (released) return;
      released = true;
      this.held -= 1;
      releaseSlot();
    };
    try {
      releaseSlot = await this.quotas.claimStream(caller);
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  /**
   * Opens a stream in a slot of its own. The slot is given back when the stream ends, fails or is
   * cancelled (the client went away), or at once when opening it fails. A `HEAD` request gets the
   * answer a `GET` would, without the body: its stream is opened (so errors are the same) and
   * cancelled at once, since nobody would ever read it.
   */
  async open<T>(method: string, caller: Caller, open: () => Promise<ReadableStream<T>>): Promise<ReadableStream<T>> {
    const release = await this.claim(caller);
    let body: ReadableStream<T>;
    try {
      body = await open();
    } catch (error) {
      release();
      throw error;
    }
    if (method === 'HEAD') {
      release();
      await body.cancel();
      return new ReadableStream<T>({ start: (controller) => controller.close() });
    }
    return releasing(body, release);
  }
}

/** `body` as it is, calling `release` once when it ends, errors or is cancelled. */
function releasing<T>(body: ReadableStream<T>, release: () => void): ReadableStream<T> {
  const reader = body.getReader();
  return new ReadableStream<T>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (!done) return controller.enqueue(value);
          release();
          controller.close();
        } catch (error) {
          release();
          controller.error(error);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    },
    // Reads only what the connection asks for, so the client's backlog stays in `body`'s queue, where its limit is checked.
    { highWaterMark: 0 },
  );
}
