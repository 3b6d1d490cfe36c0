/**
 * Settles with `work`, or with `late()` once `ms` have passed, whichever comes first. The work is
 * not stopped: it must clean up after itself, and a rejection after the deadline is ignored.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, late: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(late()), ms);
  });
  // Cleared at once, so a finished read leaves no timer keeping the process alive.
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
