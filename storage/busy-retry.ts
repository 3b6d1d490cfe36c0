import { setTimeout as delay } from 'node:timers/promises';
import { STORAGE_METHODS } from './faulty-storage.js';
import type { SessionStorage } from './session-storage.js';

/** SQLite's answers when another connection holds the lock: nothing was changed, the call may run again. */
const BUSY = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED']);

export interface BusyRetryOptions {
  /** How long one call keeps trying before the busy error is its answer. */
  budgetMs: number;
}

/**
 * Waits out another process's lock on an SQLite file without stalling the event loop. SQLite's own
 * busy handler sleeps inside the call, synchronously (better-sqlite3 is synchronous): with a 5 s busy
 * timeout every session of the process stood still for up to 5 s. Here the connection's busy
 * timeout is short, and a call that meets the lock is run again after an asynchronous pause that
 * grows, until the budget is spent. Every storage method fails atomically — a single statement or a
 * transaction — so running it again is safe.
 */
export function retryWhenBusy(inner: SessionStorage, options: BusyRetryOptions): SessionStorage {
  return retryMethodsWhenBusy(inner, STORAGE_METHODS, options);
}

/** The same for any storage whose listed methods each fail atomically (the task storage's, say). */
export function retryMethodsWhenBusy<T extends object>(inner: T, methods: readonly (keyof T & string)[], options: BusyRetryOptions): T {
  const wrapped = {} as T;
  for (const method of methods) {
    const call = inner[method] as unknown as (...args: unknown[]) => Promise<unknown>;
    // The first attempt is the plain call: a free database (nearly always) pays nothing for the retries.
    Object.defineProperty(wrapped, method, {
      enumerable: true,
      writable: true,
      configurable: true,
      value: (...args: unknown[]) => {
        const attempt = () => call.apply(inner, args);
        return method === 'close' ? attempt() : attempt().catch((error: unknown) => retryWhileBusy(attempt, error, options.budgetMs));
      },
    });
  }
  return wrapped;
}

async function retryWhileBusy<T>(attempt: () => Promise<T>, first: unknown, budgetMs: number): Promise<T> {
  const started = Date.now();
  let error = first;
  for (let pause = 5; isBusy(error) && Date.now() - started + pause <= budgetMs; pause = Math.min(pause * 2, 100)) {
    await delay(pause / 2 + Math.random() * (pause / 2));
    try {
      return await attempt();
    } catch (next) {
      error = next;
    }
  }
  throw error;
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && BUSY.has(code);
}
