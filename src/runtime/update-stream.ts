import { Subject, type Observable } from 'rxjs';
import { UPDATE_VERSION, type SessionUpdate, type UpdateEnvelope } from '../protocol/updates.js';
import type { LiveView } from './live-view.js';

export const REPLAY_CAPACITY = 512;

export type ReplayResult = { ok: true; updates: UpdateEnvelope[] } | { ok: false; error: { code: 'SnapshotRequired' } };

/**
 * A session's sequencer (RT-19, RT-20): numbers updates from 1 without gaps, keeps the last 512
 * in a ring, folds them into the live view and pushes them to the session and runtime streams.
 * A subscriber that throws is isolated by RxJS and never reaches the turn.
 */
export class UpdateStream {
  private sequence: number;
  private readonly ring: (UpdateEnvelope | undefined)[] = new Array<UpdateEnvelope | undefined>(REPLAY_CAPACITY);
  private readonly subject = new Subject<UpdateEnvelope>();
  readonly updates$: Observable<UpdateEnvelope> = this.subject.asObservable();

  constructor(
    private readonly sessionId: string,
    private readonly live: LiveView,
    private readonly runtimeSubject: Subject<UpdateEnvelope>,
    private readonly now: () => number,
    lastSequence = 0,
  ) {
    this.sequence = lastSequence;
  }

  get lastSequence(): number {
    return this.sequence;
  }

  emit(turnId: string, update: SessionUpdate): UpdateEnvelope {
    this.sequence += 1;
    const envelope: UpdateEnvelope = {
      version: UPDATE_VERSION,
      sessionId: this.sessionId,
      turnId,
      sequence: this.sequence,
      occurredAtMs: this.now(),
      update,
    };
    this.ring[this.sequence % REPLAY_CAPACITY] = envelope;
    this.live.fold(envelope);
    this.subject.next(envelope);
    this.runtimeSubject.next(envelope);
    return envelope;
  }

  /** Updates after `afterSequence`, or `SnapshotRequired` when some of them left the ring. */
  replay(afterSequence: number): ReplayResult {
    const oldest = Math.max(1, this.sequence - REPLAY_CAPACITY + 1);
    if (afterSequence + 1 < oldest) return { ok: false, error: { code: 'SnapshotRequired' } };
    const updates: UpdateEnvelope[] = [];
    for (let s = Math.max(afterSequence + 1, oldest); s <= this.sequence; s++) updates.push(this.ring[s % REPLAY_CAPACITY]!);
    return { ok: true, updates };
  }

  complete(): void {
    this.subject.complete();
  }
}
