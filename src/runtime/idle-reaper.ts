/**
 * Closes sessions nobody is using (issue: long-running hosts). A session is idle when no turn runs
 * or waits and nothing subscribes to its updates; after `ttlMs` of that it is closed, and the next
 * request reopens it from storage. Every sign of use disarms the timer.
 */
export class IdleReaper {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly ttlMs: number | null,
    private readonly close: (sessionId: string) => void,
  ) {}

  /** Re-evaluates one session: arms its timer when it is idle, disarms it when it is not. */
  update(sessionId: string, idle: boolean): void {
    if (this.ttlMs === null) return;
    const armed = this.timers.get(sessionId);
    if (!idle) {
      if (armed) clearTimeout(armed);
      this.timers.delete(sessionId);
      return;
    }
    if (armed) return;
    const timer = setTimeout(() => {
      this.timers.delete(sessionId);
      this.close(sessionId);
    }, this.ttlMs);
    timer.unref();
    this.timers.set(sessionId, timer);
  }

  forget(sessionId: string): void {
    this.update(sessionId, false);
  }

  stop(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
