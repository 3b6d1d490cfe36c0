import { STORAGE_METHODS } from '../../storage/faulty-storage.js';
import { FencedWriteError, type SessionStorage } from '../../storage/session-storage.js';
import type { TurnchartMetrics } from './metrics.js';

/**
 * The session storage, with its failures counted by operation (issue 27) — every caller's, the
 * runtime's, the host's routes' and the trace recorder's alike, which is why the count sits around
 * the storage rather than where errors surface (many are retried or swallowed on purpose). A fenced
 * write is not counted: it is the storage answering that another owner took the session. The labels
 * are the storage's method names, a fixed list; errors pass through unchanged.
 */
export function countingStorageErrors(inner: SessionStorage, metrics: TurnchartMetrics): SessionStorage {
  const counted = {} as SessionStorage;
  for (const method of STORAGE_METHODS) {
    const call = inner[method] as (...args: unknown[]) => Promise<unknown>;
    Object.defineProperty(counted, method, {
      enumerable: true,
      writable: true,
      configurable: true,
      value: async (...args: unknown[]) => {
        try {
          return await call.apply(inner, args);
        } catch (error) {
          if (!(error instanceof FencedWriteError)) metrics.storageErrors.inc({ operation: method });
          throw error;
        }
      },
    });
  }
  return counted;
}
