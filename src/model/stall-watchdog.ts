/**
 * Notices a provider that stops sending: armed while the adapter waits for the provider (the
 * response headers, then each stream part), disarmed while the runtime handles what arrived, so a
 * slow consumer is never taken for a stalled provider. A timer per wait: cheap next to a network read.
 */
export class StallWatchdog {
  stalled = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** 0 turns the watchdog off. */
    readonly timeoutMs: number,
    private readonly onStall: () => void,
  ) {}

  arm(): void {
    if (this.timeoutMs <= 0) return;
    this.timer = setTimeout(() => {
      this.stalled = true;
      this.onStall();
    }, this.timeoutMs);
  }

  disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
