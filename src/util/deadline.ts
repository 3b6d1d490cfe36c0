/**
 * Settles with `work`, or with `late()` once `ms` have passed, whichever comes first. The work is
 * not stopped: it must clean up after itself (or `late` stops it), and a rejection after the
 * deadline is ignored. The timer is cleared as soon as either side settles, so finished work leaves
 * no timer keeping the process alive.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, late: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(late()), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
