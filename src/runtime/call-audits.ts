/** When a tool call's permission wait and execution began and ended, in the runtime's clock. */
interface CallTimes {
  waitStartedAtMs: number | null;
  waitMs: number | null;
  runStartedAtMs: number | null;
  runEndedAtMs: number | null;
}

/**
 * The durations of each tool call's audit row (RL-4). The chart decides and holds who decided; how
 * long the call waited for the user and how long the tool ran are measured where those happen — the
 * provided actions and the tool's effect — and taken when the result is written.
 */
export class CallAudits {
  private readonly calls = new Map<string, CallTimes>();

  waitStarted(toolCallId: string, atMs: number): void {
    this.times(toolCallId).waitStartedAtMs = atMs;
  }

  waitEnded(toolCallId: string, atMs: number): void {
    const times = this.times(toolCallId);
    if (times.waitStartedAtMs !== null && times.waitMs === null) times.waitMs = atMs - times.waitStartedAtMs;
  }

  runStarted(toolCallId: string, atMs: number): void {
    this.times(toolCallId).runStartedAtMs = atMs;
  }

  runEnded(toolCallId: string, atMs: number): void {
    const times = this.calls.get(toolCallId);
    if (times && times.runEndedAtMs === null) times.runEndedAtMs = atMs;
  }

  /** The call's durations as its result is written, then forgotten; a wait or run still going counts until `nowMs`; `executionMs` is null when the tool never ran. */
  take(toolCallId: string, nowMs: number): { permissionWaitMs: number | null; executionMs: number | null } {
    const times = this.calls.get(toolCallId);
    this.calls.delete(toolCallId);
    if (!times) return { permissionWaitMs: null, executionMs: null };
    const waitMs = times.waitMs ?? (times.waitStartedAtMs === null ? null : nowMs - times.waitStartedAtMs);
    const runMs = times.runStartedAtMs === null ? null : (times.runEndedAtMs ?? nowMs) - times.runStartedAtMs;
    return { permissionWaitMs: waitMs, executionMs: runMs };
  }

  private times(toolCallId: string): CallTimes {
    let times = this.calls.get(toolCallId);
    if (!times) {
      times = { waitStartedAtMs: null, waitMs: null, runStartedAtMs: null, runEndedAtMs: null };
      this.calls.set(toolCallId, times);
    }
    return times;
  }
}
