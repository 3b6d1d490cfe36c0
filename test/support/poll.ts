import { setTimeout as delay } from 'node:timers/promises';

/**
 * Polls `condition` until it holds, failing after `deadlineMs`: for what has no signal to wait on
 * (a server coming up, a backend starting to wait on a lock), never as a stand-in for one.
 */
export async function until(what: string, condition: () => Promise<boolean> | boolean, deadlineMs = 15_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up after ${deadlineMs} ms waiting for ${what}`);
    await delay(20);
  }
}
