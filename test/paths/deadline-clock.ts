import { SimulatedClock } from 'xstate';
import type { RuntimeOptions } from '../../src/index.js';

type ChartClock = NonNullable<RuntimeOptions['clock']>;

/**
 * The clock the charts' timers run on in a path: XState's `SimulatedClock`, which only moves when
 * told to. The one timer the charts arm is a run's deadline (the session's `within_deadline`);
 * `expire()` moves the clock to it, so the run passes its time limit exactly where a path says.
 *
 * A deadline is armed after the step that entered it is over (XState schedules a delayed event once
 * the macrostep is done), while a director may ask for it to pass within that very step (the turn
 * has just started). Then the clock moves as soon as the deadline is armed, one microtask later,
 * once the arming step has returned; never by waiting for time to pass.
 */
export class DeadlineClock implements ChartClock {
  private readonly clock = new SimulatedClock();
  /** Armed timers: id → when they are due. */
  private readonly armed = new Map<number, number>();
  /** Called once the deadline asked for before it was armed has passed. */
  private due: (() => void) | null = null;

  setTimeout(fn: () => void, timeout: number): number {
    const id = this.clock.setTimeout(() => {
      this.armed.delete(id);
      fn();
    }, timeout);
    this.armed.set(id, this.clock.now() + timeout);
    const due = this.due;
    this.due = null;
    if (due) {
      queueMicrotask(() => {
        this.passDeadline();
        due();
      });
    }
    return id;
  }

  clearTimeout(id: number): void {
    this.armed.delete(id);
    this.clock.clearTimeout(id);
  }

  /**
   * Makes the armed deadline pass now; or, when none is armed yet, as soon as one is. Then it
   * returns the promise of that moment, so what the path does next happens after it.
   */
  expire(): Promise<void> | null {
    if (this.armed.size > 0) {
      this.passDeadline();
      return null;
    }
    return new Promise((resolve) => (this.due = resolve));
  }

  private passDeadline(): void {
    if (this.armed.size === 0) return;
    this.clock.increment(Math.min(...this.armed.values()) - this.clock.now());
  }
}
