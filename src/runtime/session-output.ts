import type { Subject } from 'rxjs';
import type { QueuedTurnRow } from '../../storage/session-storage.js';
import type { Plan } from '../protocol/plan.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import { LiveView } from './live-view.js';
import { UpdateStream, type UpdateStreamOptions } from './update-stream.js';

/**
 * What the session tells the world: its updates, numbered and streamed, and the live picture folded
 * from them (the snapshot). Kept together because the stream folds every update into the view.
 */
export interface SessionOutput {
  readonly live: LiveView;
  readonly updates: UpdateStream;
}

/** Where a session's updates go: the runtime's stream, on the runtime's clock, with the stream's options. */
export interface OutputChannel {
  readonly runtimeSubject: Subject<UpdateEnvelope>;
  readonly now: () => number;
  readonly options: UpdateStreamOptions;
}

/** The live view starts from the stored plan and queue; the stream numbers on from the stored sequence. */
export function createSessionOutput(sessionId: string, plan: Plan | null, queued: readonly QueuedTurnRow[], channel: OutputChannel): SessionOutput {
  const live = new LiveView(plan, queued.map((q) => ({ turnId: q.id, clientRequestId: q.clientRequestId })));
  return { live, updates: new UpdateStream(sessionId, live, channel.runtimeSubject, channel.now, channel.options) };
}
