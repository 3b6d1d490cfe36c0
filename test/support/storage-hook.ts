import type { SessionStorage } from '../../src/index.js';
import type { StorageMethod } from '../../storage/faulty-storage.js';

/** Runs before a storage call; the call starts once it resolves. */
export type BeforeCall = (method: StorageMethod, args: unknown[]) => Promise<void> | void;

/**
 * The storage with `before` awaited ahead of every call, so a test can make something happen at an
 * exact call of a turn (drop the database connections, fill the disk) while the call itself is real.
 */
export function withHook(inner: SessionStorage, before: BeforeCall): SessionStorage {
  return new Proxy(inner, {
    get(storage, name, receiver) {
      const value: unknown = Reflect.get(storage, name, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await before(name as StorageMethod, args);
        return (value as (...a: unknown[]) => Promise<unknown>).apply(storage, args);
      };
    },
  });
}

/** Whether a call is the write of a message with this role (`assistant`, `tool`, …). */
export function writesMessage(method: StorageMethod, args: unknown[], role: string): boolean {
  return method === 'appendMessage' && (args[0] as { message: { role: string } }).message.role === role;
}
