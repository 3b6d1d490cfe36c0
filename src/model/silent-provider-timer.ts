/**
 * Notices a provider that stops sending (`stallTimeoutMs` of the model settings, `--stall-timeout`):
 * armed while the adapter waits for the provider (the response headers, then each stream part),
 * disarmed while the runtime handles what arrived, so a slow consumer is never taken for a silent
 * provider. A timer per wait: cheap next to a network read. Not the turn's no-progress watchdog
 * (`machines/stall-watchdog.machine.ts`), which watches the whole turn's updates.
 */
export class SilentProviderTimer {
  stalled = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** 0 turns the timer off. */
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
