import type { RunRow } from '../../storage/session-storage.js';
import { RUN_END_EVENTS, RunEventMapper, type RunEventName } from '../protocol/run-events.js';
import { runErrorCodeOf, runHasEnded } from '../protocol/run-status.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { FeedStart, UpdateFeed } from './session-access.js';
import type { SseOptions } from './sse-stream.js';
import { sseBody, sseFrame } from './sse-writer.js';
import { resumePoint } from './resume-point.js';

/** What a run's event stream is built from (`GET /runs/{runId}/events`). */
export interface RunStreamSource {
  /** The run as storage holds it now. */
  run: RunRow;
  /** The run's session's updates after `after ?? 0`; null when the session is open nowhere (nothing of it is live). */
  feed: UpdateFeed | null;
  /** The client's resume point (`Last-Event-ID`); null for a new client. */
  after: number | null;
  /** The client's last event was the run's end (its id says so): it has everything. */
  hadEnd: boolean;
  /** The run as storage holds it when read again (a queued run that left the queue without starting was cancelled). */
  reread(): Promise<RunRow | undefined>;
  /** A sequence at or above every update the session has issued: the id of an end told from storage. */
  issuedUpTo(): Promise<number>;
}

/**
 * Issue 30: one run's events in the seed's names, as Server-Sent Events. Each event mapped from an
 * update (`RUN_EVENT_TABLE`) has `id:` the update's session sequence, so `Last-Event-ID` resumes it
 * from the session's replay ring as the session stream does; the stream ends with the run's end event.
 *
 * What the ring no longer holds is told from what is known instead: a run the snapshot shows
 * running gets `run.started` (for a new client), and a run that ended out of the ring's sight gets
 * its end from storage, with an id at or above every sequence the session issued.
 *
 * The end event's id says it is the end (`<sequence>-end`, `endEventId`): a client that comes back
 * with it gets null — 204, which tells an EventSource to stop — and any other client of an ended run
 * gets the end, from the ring or from storage. Neither the ring nor storage could tell otherwise: a
 * run that ended with no update in the ring (its host went away) and an end the client was given
 * before its session closed look the same from there.
 */
export async function runEventStream(source: RunStreamSource, options: SseOptions, disconnect?: () => void): Promise<ReadableStream<Uint8Array> | null> {
  const { feed, after } = source;
  if (source.hadEnd) return close(feed);
  let run = source.run;
  const mapper = new RunEventMapper(run.runId);
  const pending: string[] = [];
  let write = (frame: string): void => void pending.push(frame);
  let lastSent = after ?? 0;
  let started = false;
  let ended = false;
  let queued = run.status === 'queued';
  let leftQueue = false;
  let onQueueLeft = (): void => void (leftQueue = true);

  const emit = (event: RunEventName, data: Record<string, unknown>, id?: number): void => {
    started ||= event === 'run.started';
    const end = RUN_END_EVENTS.has(event);
    ended ||= end;
    write(sseFrame(JSON.stringify(data), event, end && id !== undefined ? endEventId(id) : id));
  };
  const take = (envelope: UpdateEnvelope): void => {
    if (ended || envelope.sequence <= lastSent) return;
    lastSent = envelope.sequence;
    const { update } = envelope;
    // The queue is the session's: a queued run that leaves it without starting was cancelled while it waited.
    if (update.type === 'queue_updated') {
      const inQueue = update.queue.some((entry) => entry.turnId === run.id);
      if (queued && !inQueue && !started) onQueueLeft();
      queued = inQueue;
    }
    if (envelope.turnId !== run.id) return;
    const event = mapper.map(envelope);
    if (event) emit(event.event, event.data, envelope.sequence);
  };
  /** `neverStarted`: the run left the queue without starting (cancelled while it waited): no `run.started`. */
  const endFromStorage = async (stored: RunRow, neverStarted = false): Promise<void> => {
    const id = await source.issuedUpTo();
    if (!started && !neverStarted && after === null) emit('run.started', placeOf(stored));
    emit(endEventOf(stored), { ...placeOf(stored), ...storedOutcome(stored) }, id);
  };

  const start = feed?.start;
  if (start?.kind === 'replay') for (const envelope of start.updates) take(envelope);
  else if (start) takeSnapshot(start);
  // Read before the feed was taken: a run the feed no longer shows running or queued may have ended since.
  if (!ended && !started && !runHasEnded(run.status) && (leftQueue || (start && start.kind !== 'replay' && !queued))) run = (await source.reread()) ?? run;
  // The client was not given the end (its id would say so): what the ring did not hold, storage tells.
  if (!ended && runHasEnded(run.status)) await endFromStorage(run, leftQueue);
  if (ended || !feed) close(feed);

  return sseBody(options, disconnect, (sink) => {
    write = (frame) => sink.write(frame);
    for (const frame of pending.splice(0)) sink.write(frame);
    if (ended || !feed) {
      sink.close();
      return () => undefined;
    }
    onQueueLeft = () =>
      void source.reread().then(async (stored) => {
        if (stored && runHasEnded(stored.status) && !started && !ended) await endFromStorage(stored, true);
        if (ended) sink.close();
      }, () => sink.close());
    return feed.subscribe({
      update: (envelope) => {
        take(envelope);
        if (ended) sink.close();
      },
      end: () => sink.close(),
    });
  });

  /** The ring did not hold the client's range: where the snapshot shows the run, then the continuation it comes with. */
  function takeSnapshot(snapshotStart: Exclude<FeedStart, { kind: 'replay' }>): void {
    const { snapshot } = snapshotStart;
    lastSent = Math.max(lastSent, snapshot.lastUpdateSequence);
    queued = snapshot.queue.some((entry) => entry.turnId === run.id);
    if (snapshot.runtime.kind === 'running' && snapshot.runtime.turnId === run.id) {
      if (after === null) emit('run.started', placeOf(run), snapshot.lastUpdateSequence);
      started = true;
    }
    if (snapshotStart.kind === 'snapshot_required') for (const envelope of snapshotStart.updates ?? []) take(envelope);
  }
}

/** A feed taken and not streamed: its subscription is given back at once. */
function close(feed: UpdateFeed | null): null {
  feed?.subscribe({ update: () => undefined, end: () => undefined })();
  return null;
}

function placeOf(run: RunRow): Record<string, unknown> {
  return { runId: run.runId, sessionId: run.sessionId, turnId: run.id };
}

/** A stored run's end event: `interrupted`, which the seed has no name for, is a failure (`errorCode: interrupted`). */
function endEventOf(run: RunRow): RunEventName {
  switch (run.status) {
    case 'completed':
      return 'run.completed';
    case 'cancelled':
      return 'run.cancelled';
    case 'timed_out':
      return 'run.timed_out';
    default:
      return 'run.failed';
  }
}

function storedOutcome(run: RunRow): Record<string, unknown> {
  const errorCode = runErrorCodeOf(run.status, run.errorCode);
  return {
    status: run.status === 'interrupted' ? 'failed' : run.status,
    ...(errorCode !== null && { errorCode }),
    ...(run.errorMessage !== null && { message: run.errorMessage }),
    ...(run.finalText !== null && run.status === 'completed' && { finalText: run.finalText }),
  };
}

/** The id of a run's end event: its sequence, marked as the end, so a client that comes back with it is known to have it. */
function endEventId(sequence: number): string {
  return `${sequence}-end`;
}

/** Issue 30: a run stream's `Last-Event-ID`: where to resume, and whether it was the run's end. */
export function runResumePoint(lastEventId: string | undefined, after: number | undefined): { after: number | null; hadEnd: boolean } {
  const end = lastEventId === undefined ? null : /^(\d{1,15})-end$/.exec(lastEventId.trim());
  if (end) return { after: Number(end[1]), hadEnd: true };
  return { after: resumePoint(lastEventId, after), hadEnd: false };
}
