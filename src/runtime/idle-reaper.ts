import type { ChartClock } from './chart-clock.js';

/**
 * Closes sessions nobody is using (issue: long-running hosts). A session is idle when no turn runs
 * or waits and nothing subscribes to its updates; after `ttlMs` of that it is closed, and the next
 * request reopens it from storage. Every sign of use disarms the timer. The timers run on the
 * charts' clock, so a test moves time for the reaper exactly as it does for a run's time limit.
 */
export class IdleReaper {
  private readonly timers = new Map<string, unknown>();

  constructor(
    private readonly ttlMs: number | null,
    private readonly clock: ChartClock,
    /** Asked when the time is up: the session closes only if it is still idle then. */
    private readonly close: (sessionId: string) => void,
  ) {}

  /** Re-evaluates one session: arms its timer when it is idle, disarms it when it is not. */
  update(sessionId: string, idle: boolean): void {
    if (this.ttlMs === null) return;
    const armed = this.timers.get(sessionId);
    if (!idle) {
      if (armed !== undefined) this.clock.clearTimeout(armed);
      this.timers.delete(sessionId);
      return;
    }
    if (armed !== undefined) return;
    const timer: unknown = this.clock.setTimeout(() => {
      this.timers.delete(sessionId);
      this.close(sessionId);
    }, this.ttlMs);
    // A wall-clock timer is no reason to keep the process alive; a simulated one has nothing to unref.
    (timer as { unref?: () => void } | null)?.unref?.();
    this.timers.set(sessionId, timer);
  }

  forget(sessionId: string): void {
    this.update(sessionId, false);
  }

  stop(): void {
    for (const timer of this.timers.values()) this.clock.clearTimeout(timer);
    this.timers.clear();
  }
}
