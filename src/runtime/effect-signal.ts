/**
 * One effect's cancellation, with its `AbortSignal` made on first use. Creating an `AbortSignal`
 * costs a few microseconds in Node 20 and most effects finish with nobody having looked at it, so
 * the signal exists only once a model port or a tool reads it; `aborted` answers without one. A
 * signal read after the cancel is already aborted.
 */
export class EffectSignal {
  private controller: AbortController | null = null;
  private cancelled = false;

  get aborted(): boolean {
    return this.cancelled;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort();
    }
    return this.controller.signal;
  }

  abort(): void {
    this.cancelled = true;
    this.controller?.abort();
  }
}

/** Handed to effects that cannot be cancelled: nothing ever aborts it. */
export const NEVER_CANCELLED: Pick<EffectSignal, 'aborted' | 'signal'> = new EffectSignal();
