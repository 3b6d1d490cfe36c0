import type { SessionStorage } from '../../storage/session-storage.js';
import { SessionOwnedElsewhereError } from '../protocol/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { messageOf } from '../protocol/error-message.js';
import type { Warn } from '../protocol/log-fields.js';

/**
 * A host that dies (SIGKILL, a lost machine) leaves its sessions under leases that simply run out.
 * Nobody may ask for such a session again, so every host of a cluster, every `everyMs`, does for the
 * sessions whose leases have run out what a restart does at startup: their running turns and spans
 * are corrected (RT-24) and their queued turns started — here, by whichever host gets there first.
 * Returns the function that stops it.
 */
export function sweepExpiredLeases(runtime: Runtime, storage: SessionStorage, everyMs: number, warn: Warn): () => void {
  let running = false;
  const sweep = async () => {
    await runtime.ownership.reapGoneOwners();
    await storage.correctInterrupted(Date.now());
    for (const sessionId of await storage.unheldSessionsWithWork()) {
      // Another host may take it first: then it is that host's to run.
      await runtime.openSession(sessionId).catch((error: unknown) => {
        if (!(error instanceof SessionOwnedElsewhereError)) warn(`could not resume the queue of session ${sessionId}: ${messageOf(error)}`, { sessionId });
      });
    }
  };
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweep()
      .catch((error: unknown) => warn(`the lease sweep failed: ${messageOf(error)}`))
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
