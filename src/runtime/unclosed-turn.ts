import { FencedWriteError } from '../../storage/session-storage.js';
import type { RuntimeServices, SessionEnv } from './session-env.js';
import { messageOf } from '../protocol/error-message.js';

/**
 * A turn whose closing write failed still says `running` in storage, which would block every later
 * turn (one running turn per session). Before the next turn, and on `reload()`, the write is tried
 * again; when it fails again although the row is still running — the outcome itself cannot be
 * stored — the turn is closed as `failed persistence_error` instead, a write any database takes.
 * A row that is no longer running was closed after all (the failure came after the commit) or by a
 * restart: nothing is left to do. Only a storage that keeps failing leaves it for the next attempt.
 */
export async function closeUnclosedTurn(env: SessionEnv, services: RuntimeServices): Promise<void> {
  const unclosed = env.turns.unclosedTurn;
  if (!unclosed) return;
  const { storage } = services;
  try {
    await storage.endTurn(unclosed.turnId, unclosed.end, env.config.fence);
  } catch (error) {
    if (error instanceof FencedWriteError) throw error;
    const row = await storage.getTurn(unclosed.turnId);
    if (row?.status === 'running') {
      const reason = messageOf(error);
      await storage.endTurn(
        unclosed.turnId,
        {
          status: 'failed',
          errorCode: 'persistence_error',
          errorMessage: `the turn's outcome (${unclosed.end.status}) could not be stored: ${reason}`,
          finalText: null,
          finishedAtMs: services.now(),
        },
        env.config.fence,
      );
    }
  }
  env.turns.unclosedTurn = null;
}
