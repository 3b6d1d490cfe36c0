import type { RunRow } from '../../storage/session-storage.js';
import { mayAccess, type Caller } from '../protocol/principal.js';
import { runErrorCodeOf, runHasEnded, runStatusOf } from '../protocol/run-status.js';
import type { TurnPhase } from '../protocol/updates.js';
import { ApiError, viaStorage } from './errors.js';
import { openSessionOf, type HostContext } from './host-context.js';

/**
 * Issue 30: the run, if the caller may see its session. Another principal's run answers `UnknownRun`
 * exactly as a missing one does, as sessions do (`sessionOf`), so a run id never tells whose it is.
 */
export async function visibleRun(host: HostContext, runId: string, caller: Caller): Promise<RunRow> {
  const run = await viaStorage(() => host.storage.getRun(runId));
  const standing = run && (await viaStorage(() => host.storage.sessionStanding(run.sessionId)));
  if (!run || !standing || !mayAccess(caller, standing.principal)) throw new ApiError('UnknownRun', `no run '${runId}'`);
  return run;
}

/** The run resource's body; a running run's live phase (`waiting_tool`) is asked of the session where it is open. */
export async function runBody(host: HostContext, stored: RunRow, caller: Caller) {
  const run = stored.status === 'queued' ? await settledQueued(host, stored, caller) : stored;
  const phase = run.status === 'running' ? await livePhase(host, run, caller) : null;
  const errorCode = runErrorCodeOf(run.status, run.errorCode);
  return {
    runId: run.runId,
    sessionId: run.sessionId,
    turnId: run.id,
    status: runStatusOf(run.status, phase),
    triggerType: run.trigger,
    ...(errorCode !== null && { errorCode }),
    startedAtMs: run.startedAtMs,
    ...(run.finishedAtMs !== null && { endedAtMs: run.finishedAtMs }),
  };
}

/**
 * A queued run as its session has it: a cancel of a queued turn is settled there before its row is
 * written, so a client told `run.cancelled` never reads `queued` after it.
 */
async function settledQueued(host: HostContext, run: RunRow, caller: Caller): Promise<RunRow> {
  const session = await openSessionOf(host, run.sessionId, caller);
  const state = session && (await session.turnState(run.id, 0));
  return state?.ok && runHasEnded(state.status) ? { ...run, status: state.status } : run;
}

/** The phase of the run's turn where its session is open (here, or on another host of the cluster); null where it is open nowhere. */
async function livePhase(host: HostContext, run: RunRow, caller: Caller): Promise<TurnPhase | null> {
  const local = host.runtime.openHandle(run.sessionId);
  const view = local?.isOpen ? local.snapshot().runtime : (await (await openSessionOf(host, run.sessionId, caller))?.snapshot())?.runtime;
  return view?.kind === 'running' && view.turnId === run.id ? view.phase : null;
}
