import type { EffectCancellation } from './effect-port.js';

/** An effect stopped at a safe point because its turn was cancelled, timed out or stopped. */
export class EffectAborted extends Error {
  constructor(what: string) {
    super(`${what} was aborted`);
    this.name = 'EffectAborted';
  }
}

/**
 * `work`, unless the cancellation aborts first. Only for work without side effects (reads): the
 * work itself goes on in the background and its result is dropped.
 */
export function untilAborted<T>(work: Promise<T>, cancellation: EffectCancellation): Promise<T> {
  if (cancellation.aborted) return Promise.reject(new EffectAborted('a read'));
  const signal = cancellation.signal;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new EffectAborted('a read'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
