import type { TaskEventRow } from '../../storage/task-storage.js';
import type { ChartClock } from '../runtime/chart-clock.js';

/**
 * LC-4's max duration counts the time a task spends RUNNING, not PAUSED: a pause is the caller's
 * decision, and a task paused overnight has not been running for a night. Time RUNNING while no
 * worker ran it (its worker died, the next one had not yet taken over) does count: the task was
 * RUNNING all along.
 *
 * The task chart's running clock is this meter: it counts while the chart is in `running` and
 * calls back once the budget is spent. What a task had spent before its worker died is read back
 * from its stored `state_changed` events (`runningTimeOf`), which say when it entered and left
 * RUNNING; nothing else is stored for it.
 */
export class RunningTime {
  private since: number | null = null;

  constructor(
    /** The task's max duration. */
    private readonly budgetMs: number,
    /** RUNNING time already spent (a recovered task's; 0 for a new one). */
    private spentMs: number,
    /** The clock the chart's timers run on; it tells the time too when it can (a `SimulatedClock` does). */
    private readonly clock: ChartClock,
    private readonly now: () => number,
  ) {}

  /** Starts counting; `onSpent` is called once the budget is spent. The function returned stops counting. */
  run(onSpent: () => void): () => void {
    this.since = this.time();
    // At least a millisecond: a recovered task already past its budget still fails through its timer, as any other does.
    const id = this.clock.setTimeout(onSpent, Math.max(1, this.budgetMs - this.spentMs));
    return () => {
      this.clock.clearTimeout(id);
      if (this.since === null) return;
      this.spentMs += Math.max(0, this.time() - this.since);
      this.since = null;
    };
  }

  /** RUNNING time spent so far, the stretch under way included. */
  get spent(): number {
    return this.spentMs + (this.since === null ? 0 : Math.max(0, this.time() - this.since));
  }

  private time(): number {
    const clock = this.clock as ChartClock & { now?: () => number };
    return typeof clock.now === 'function' ? clock.now() : this.now();
  }
}

/**
 * The RUNNING time a task's stored events account for, up to `now`: every stretch from a
 * `state_changed` into RUNNING to the next one out of it (a recovery's RUNNING → RUNNING goes on
 * with the stretch it finds open).
 */
export function runningTimeOf(events: readonly Pick<TaskEventRow, 'eventType' | 'data' | 'createdAtMs'>[], now: number): number {
  let spent = 0;
  let since: number | null = null;
  for (const event of events) {
    if (event.eventType !== 'state_changed' || typeof event.data.to_state !== 'string') continue;
    if (event.data.to_state === 'RUNNING') since ??= event.createdAtMs;
    else if (since !== null) {
      spent += Math.max(0, event.createdAtMs - since);
      since = null;
    }
  }
  return since === null ? spent : spent + Math.max(0, now - since);
}
