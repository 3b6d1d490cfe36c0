import type { TurnOutcome } from '../../src/index.js';
import type { SessionDirector } from './session-director.js';
import type { Stage } from './stage.js';

/**
 * How every turn a session path got accepted must have ended. A turn that ran announces its end
 * with `turn_finished` and its stored row says what the outcome says. A queued turn cancelled before
 * it started (RL-2) ends `cancelled` without ever running: no `turn_finished`, `waitForTurn` answers
 * `cancelled`, the row says `cancelled`. A queued turn the session was stopped with stays queued in
 * storage, to start when the session is opened again.
 */
export async function checkTurnEnds(stage: Stage, director: SessionDirector): Promise<string[]> {
  const context = stage.session.actor.getSnapshot().context;
  const leftQueued = new Set(context.queue.map((q) => q.turnId));
  const problems: string[] = [];
  for (const turnId of Object.values(context.accepted)) {
    if (director.cancelledWhileQueued.has(turnId)) problems.push(...(await checkCancelledWhileQueued(stage, turnId)));
    else if (leftQueued.has(turnId)) problems.push(...(await checkLeftQueued(stage, turnId)));
    else problems.push(...(await checkRan(stage, turnId, director.unfinishedWrites.has(turnId))));
  }
  const shown = stage.session.snapshot().queue;
  if (JSON.stringify(shown) !== JSON.stringify(context.queue)) problems.push(`the snapshot shows the queue ${JSON.stringify(shown)}, the chart holds ${JSON.stringify(context.queue)}`);
  for (const turnId of director.cancelledWhileQueued) {
    if (!Object.values(context.accepted).includes(turnId)) problems.push(`cancelled queued turn ${turnId} was never accepted`);
  }
  return problems;
}

const finishedUpdate = (stage: Stage, turnId: string) => stage.updates.find((u) => u.turnId === turnId && u.update.type === 'turn_finished');

async function checkRan(stage: Stage, turnId: string, terminalWriteFailed: boolean): Promise<string[]> {
  const finished = finishedUpdate(stage, turnId);
  if (!finished) return [`turn ${turnId} never announced its end`];
  await stage.checkEnd(turnId, (finished.update as { outcome: TurnOutcome }).outcome, terminalWriteFailed);
  return [];
}

async function checkCancelledWhileQueued(stage: Stage, turnId: string): Promise<string[]> {
  const problems: string[] = [];
  if (finishedUpdate(stage, turnId)) problems.push(`queued turn ${turnId} was cancelled before it started, yet announced turn_finished`);
  if (stage.updates.some((u) => u.turnId === turnId && u.update.type === 'turn_started')) problems.push(`cancelled queued turn ${turnId} started`);
  const status = await stage.session.turnStatus(turnId);
  // A turn still queued or running would keep `waitForTurn` waiting: the status says so first.
  if (!status.ok || status.status !== 'cancelled') return [...problems, `cancelled queued turn ${turnId} has status ${JSON.stringify(status)}`];
  const outcome = await stage.session.waitForTurn(turnId);
  if (outcome.status !== 'cancelled') problems.push(`waitForTurn of cancelled queued turn ${turnId} gave ${JSON.stringify(outcome)}`);
  const row = await stage.storage.getTurn(turnId);
  if (row?.status !== 'cancelled') problems.push(`cancelled queued turn ${turnId} is stored ${row?.status}`);
  return problems;
}

async function checkLeftQueued(stage: Stage, turnId: string): Promise<string[]> {
  const problems: string[] = [];
  if (stage.updates.some((u) => u.turnId === turnId && (u.update.type === 'turn_started' || u.update.type === 'turn_finished'))) {
    problems.push(`turn ${turnId}, left queued by stop, started or finished`);
  }
  const row = await stage.storage.getTurn(turnId);
  if (row?.status !== 'queued') problems.push(`turn ${turnId}, left queued by stop, is stored ${row?.status}`);
  return problems;
}
