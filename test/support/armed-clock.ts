import { SimulatedClock } from 'xstate';

/**
 * XState's `SimulatedClock`, telling the test when a timer of a given length is armed — so a test
 * moves time only once the timer it means to pass exists (a wait's, a hook's), never before.
 */
export class ArmedClock extends SimulatedClock {
  private readonly watchers: { ms: number; fire: () => void }[] = [];

  override setTimeout(fn: (...args: unknown[]) => void, ms: number): number {
    const id = super.setTimeout(fn, ms);
    for (const watcher of this.watchers.filter((w) => w.ms === ms)) {
      this.watchers.splice(this.watchers.indexOf(watcher), 1);
      watcher.fire();
    }
    return id as number;
  }

  /** Resolves when the next timer of `ms` is armed. */
  armed(ms: number): Promise<void> {
    return new Promise((resolve) => this.watchers.push({ ms, fire: resolve }));
  }
}
