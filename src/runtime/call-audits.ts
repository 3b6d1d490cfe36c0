import type { ToolAttempt } from '../protocol/audit.js';
import type { ToolResultStatus } from '../protocol/messages.js';
import type { ToolFailureKind } from '../protocol/tool-retry.js';

/** One run of a call's tool: a retry policy may make several (issue 30). */
interface Run {
  startedAtMs: number;
  endedAtMs: number | null;
  status: ToolResultStatus | null;
  failure: ToolFailureKind | null;
}

/** When a tool call's permission wait and its runs began and ended, in the runtime's clock. */
interface CallTimes {
  waitStartedAtMs: number | null;
  waitMs: number | null;
  runs: Run[];
}

/**
 * The durations of each tool call's audit row (RL-4). The chart decides and holds who decided; how
 * long the call waited for the user and how long the tool ran are measured where those happen — the
 * provided actions and the tool's effect — and taken when the result is written. A call its retry
 * policy ran again (issue 30) lists each run.
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
    this.times(toolCallId).runs.push({ startedAtMs: atMs, endedAtMs: null, status: null, failure: null });
  }

  /** The current run ended: with its result, or (a thrown tool) without one. */
  runEnded(toolCallId: string, atMs: number, result?: { status: ToolResultStatus; failure?: ToolFailureKind }): void {
    const run = this.calls.get(toolCallId)?.runs.at(-1);
    if (!run || run.endedAtMs !== null) return;
    run.endedAtMs = atMs;
    run.status = result?.status ?? 'failed';
    run.failure = result?.failure ?? null;
  }

  /**
   * The call's durations as its result is written, then forgotten; a wait or run still going counts
   * until `nowMs`; `executionMs` (every run together) is null when the tool never ran; `attempts`
   * lists the runs when there was more than one.
   */
  take(toolCallId: string, nowMs: number): { permissionWaitMs: number | null; executionMs: number | null; attempts?: ToolAttempt[] } {
    const times = this.calls.get(toolCallId);
    this.calls.delete(toolCallId);
    if (!times) return { permissionWaitMs: null, executionMs: null };
    const waitMs = times.waitMs ?? (times.waitStartedAtMs === null ? null : nowMs - times.waitStartedAtMs);
    const durations = times.runs.map((run) => (run.endedAtMs ?? nowMs) - run.startedAtMs);
    const runMs = durations.length === 0 ? null : durations.reduce((a, b) => a + b, 0);
    if (times.runs.length < 2) return { permissionWaitMs: waitMs, executionMs: runMs };
    const attempts = times.runs.map((run, i) => ({ attempt: i + 1, status: run.status ?? 'outcome_unknown', failure: run.failure, durationMs: durations[i]! }));
    return { permissionWaitMs: waitMs, executionMs: runMs, attempts };
  }

  private times(toolCallId: string): CallTimes {
    let times = this.calls.get(toolCallId);
    if (!times) {
      times = { waitStartedAtMs: null, waitMs: null, runs: [] };
      this.calls.set(toolCallId, times);
    }
    return times;
  }
}
