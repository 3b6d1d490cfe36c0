/**
 * Issue 28: the host's socket writes made together. On loopback (and on any link to a client that
 * waits for it) a write that finds its reader asleep pays to wake it — in the kernel, on the host's
 * thread: on the 2-core machine of the HTTP figures about 55–85 µs of the host's CPU for a lone
 * write against 13–27 µs each for writes made back to back to other sockets (`bench/README.md`).
 * A turn through the API makes about 7 writes (the `POST`'s 202, the `GET ?wait`'s answer, ~5 SSE
 * chunks), each from its own task when made at once. Held here, what the tasks of one turn of the
 * event loop have to say — finished answers, SSE frames — goes out in one burst in its check phase
 * (`setImmediate`), after that turn's I/O callbacks; but once the first write held has waited
 * `MAX_HOLD_MS`, the next task to write lets everything out at its end (`process.nextTick`), so a
 * long turn of a busy loop holds nothing much longer than that.
 */
export const MAX_HOLD_MS = 2;

/** Held writes, let out together; `now` is the clock the hold is measured with. */
export class WriteBatch {
  private waiting: Array<() => void> = [];
  private heldSince = 0;
  private immediate = false;
  private tick = false;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Runs `job`, which writes to sockets, with the other writes of this turn of the event loop. */
  hold(job: () => void): void {
    if (this.waiting.length === 0) this.heldSince = this.now();
    this.waiting.push(job);
    if (!this.immediate) {
      this.immediate = true;
      setImmediate(() => {
        this.immediate = false;
        this.writeAll();
      });
    }
    if (!this.tick && this.now() - this.heldSince >= MAX_HOLD_MS) {
      this.tick = true;
      process.nextTick(() => this.writeAll());
    }
  }

  private writeAll(): void {
    this.tick = false;
    const jobs = this.waiting;
    if (jobs.length === 0) return;
    this.waiting = [];
    for (const job of jobs) {
      try {
        job();
      } catch (error) {
        // As a throw from its own task would be: the other jobs still run.
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }
}

/** The host's writes: every socket of the process shares one loop, so they share one batch. */
const writes = new WriteBatch();

/** Runs `job`, which writes to sockets, with the other writes of this turn of the event loop. */
export function atWriteTime(job: () => void): void {
  writes.hold(job);
}
