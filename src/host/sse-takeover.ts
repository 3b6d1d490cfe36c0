import { setTimeout as delay } from 'node:timers/promises';
import { ApiError } from './errors.js';

/** How long past the first lease estimate a stream keeps waiting for a dead owner's session. */
const TAKEOVER_MARGIN_MS = 10_000;

/**
 * Runs `attempt` — reaching a session to stream it — until it works. A stream's client gives up on
 * an error (an EventSource on anything but 200; `useChat`'s resume takes an error as the end of
 * its turn), so while the session's owner is unreachable and its lease still runs (it died, the
 * lease has not run out) the request waits for the lease to end and then takes the session, or
 * follows whoever took it: the client then gets the rest of its turn instead of a 503. Any other
 * error, the client leaving, or the lease estimate passing by a margin ends the wait with the error.
 */
export async function untilOwnerAnswers<T>(attempt: () => Promise<T>, gone: AbortSignal): Promise<T> {
  let deadline: number | null = null;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const waitMs = ownerUnavailableFor(error);
      deadline ??= waitMs === null ? null : Date.now() + waitMs + TAKEOVER_MARGIN_MS;
      if (waitMs === null || deadline === null || Date.now() > deadline || gone.aborted) throw error;
      await delay(Math.min(Math.max(waitMs, 50), 1_000), undefined, { signal: gone }).catch(() => undefined);
      if (gone.aborted) throw error;
    }
  }
}

function ownerUnavailableFor(error: unknown): number | null {
  if (!(error instanceof ApiError) || error.code !== 'OwnerUnavailable') return null;
  const retryAfterMs = error.details.retryAfterMs;
  return typeof retryAfterMs === 'number' ? retryAfterMs : 0;
}
