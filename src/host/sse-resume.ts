import { REPLAY_CAPACITY } from '../runtime/update-stream.js';
import type { RuntimeView, SessionSnapshot } from '../protocol/session-snapshot.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { FeedStart } from './session-access.js';

/** What a stream's start reads of a session open here (a `SessionHandle`). */
export interface ReplaySource {
  snapshot(): SessionSnapshot;
  /** Updates after the sequence, or not ok when some of them are not in the replay ring (left it, or issued before this opening). */
  replayUpdates(afterSequence: number): { ok: true; updates: UpdateEnvelope[] } | { ok: false };
}

/**
 * Where an event stream starts on the session's owner. A new client starts from a snapshot; a
 * resuming one from the ring, or — its range gone — from `snapshot_required`.
 *
 * Issue 26: a session that changed hands (its host restarted, or another took it from a dead owner)
 * numbers on above the block the last owner reserved, so a client resuming with an id of the last
 * owner always lands here, and its turn usually goes on under the new owner before the client is
 * back. The current snapshot would then already hold part of the continuation (its draft, or the
 * steps it finished) and the client would never see those updates: a chat prints nothing of them.
 * So when the ring still holds everything this owner issued, the client is given the session as
 * this owner opened it — the turn it knew still running, its draft gone with the old host — and
 * then every update of the continuation, `turn_resumed` first. What the old owner issued after
 * the client's last id is lost with it; the snapshot says so by being one.
 */
export function feedStart(handle: ReplaySource, after: number | null): FeedStart {
  if (after === null) return { kind: 'snapshot', snapshot: handle.snapshot() };
  const replay = handle.replayUpdates(after);
  if (replay.ok) return { kind: 'replay', after, updates: replay.updates };
  const snapshot = handle.snapshot();
  const opening = openingOf(handle, snapshot.lastUpdateSequence);
  // A client past this owner's numbers (it cannot be) or within them (the ring moved on): the snapshot alone.
  if (!opening || after >= opening.after) return { kind: 'snapshot_required', snapshot, updates: [] };
  const before = snapshotAtOpening(snapshot, opening);
  return before ? { kind: 'snapshot_required', snapshot: before, updates: opening.updates } : { kind: 'snapshot_required', snapshot, updates: [] };
}

/** Everything this owner issued since it opened the session, and the last sequence before that. */
interface Opening {
  after: number;
  updates: UpdateEnvelope[];
}

/**
 * The opening's updates when the ring still holds all of them; null once it has moved past the
 * first. The runtime does not say where the opening began, so it is found from the ring's answers:
 * a resume point is replayable from just before the oldest update the ring holds, and below the
 * capacity that oldest one is the opening's first.
 */
function openingOf(handle: ReplaySource, last: number): Opening | null {
  // Updates held back for a sequence reservation are not replayable yet: the snapshot alone then.
  if (!handle.replayUpdates(last).ok) return null;
  let low = Math.max(0, last - REPLAY_CAPACITY);
  let high = last;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (handle.replayUpdates(middle).ok) high = middle;
    else low = middle + 1;
  }
  const replay = handle.replayUpdates(low);
  if (!replay.ok || replay.updates.length >= REPLAY_CAPACITY) return null;
  return { after: low, updates: replay.updates };
}

/** Updates that only set what the session shows beside its turn (the queue, the plan): they may come before the turn's. */
const SESSION_LEVEL = new Set(['queue_updated', 'plan_updated']);

/** Updates that start or end what the snapshot shows as the session's turn. */
const TURN_EDGES = new Set(['turn_started', 'turn_resumed', 'turn_finished']);

/**
 * The session as this owner opened it, which the opening's updates take to the current snapshot:
 * before a resumed turn, that turn running with nothing drafted (updates of that turn may come
 * before its `turn_resumed`, as the phase it goes on in); before a new turn, no turn. An opening
 * that starts any other way (a turn ended without resuming) gives null: the client then gets the
 * current snapshot, as before issue 26. Settings and the queue are taken as they are now: the
 * opening's own `queue_updated`, if any, follow and set it again.
 */
function snapshotAtOpening(current: SessionSnapshot, opening: Opening): SessionSnapshot | null {
  if (opening.updates.length === 0) return current;
  const edge = opening.updates.findIndex((envelope) => TURN_EDGES.has(envelope.update.type));
  const first = opening.updates[edge];
  if (!first) return null;
  const leading = opening.updates.slice(0, edge).filter((envelope) => !SESSION_LEVEL.has(envelope.update.type));
  const update = first.update;
  let runtime: RuntimeView;
  if (update.type === 'turn_started' && leading.length === 0) runtime = { kind: 'idle' };
  else if (update.type === 'turn_resumed' && leading.every((envelope) => envelope.turnId === first.turnId)) {
    const plan = opening.updates.some((envelope) => envelope.update.type === 'plan_updated') ? null : current.runtime.kind === 'idle' ? null : current.runtime.plan;
    runtime = { kind: 'running', turnId: first.turnId, clientRequestId: update.clientRequestId, phase: 'starting', draftText: '', draftReasoning: '', toolCalls: [], pendingApproval: null, plan };
  } else return null;
  return { ...current, lastUpdateSequence: opening.after, runtime };
}
