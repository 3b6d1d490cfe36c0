import type { SessionHandle } from '../runtime/session-handle.js';
import { SessionWatch } from './session-watch.js';

/**
 * The host's inspector: one `SessionWatch` per session that at least one page watches, shared by
 * those pages, dropped when the last one leaves (inspection is then off for that session again).
 */
export class InspectHub {
  private readonly watches = new Map<SessionHandle, SessionWatch>();
  private cursor = 0;
  private readonly cursors = { next: () => ++this.cursor };

  constructor(private readonly now: () => number = Date.now) {}

  /** The session's watch; it switches inspection on when its first listener arrives. */
  watch(handle: SessionHandle): SessionWatch {
    let watch = this.watches.get(handle);
    if (!watch) {
      watch = new SessionWatch(handle, this.cursors, (idle) => this.forget(idle), this.now);
      this.watches.set(handle, watch);
    }
    return watch;
  }

  /** Sessions watched right now. */
  get watchedCount(): number {
    return [...this.watches.values()].filter((w) => w.listenerCount > 0).length;
  }

  private forget(watch: SessionWatch): void {
    if (this.watches.get(watch.handle) === watch) this.watches.delete(watch.handle);
  }
}
