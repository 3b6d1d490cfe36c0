import { Subject, type Observable } from 'rxjs';
import { UPDATE_VERSION, type SessionUpdate, type UpdateEnvelope } from '../protocol/updates.js';
import type { ReplayResult } from '../protocol/command-results.js';
import { isolated } from './isolated-observable.js';
import type { LiveView } from './live-view.js';

export const REPLAY_CAPACITY = 512;

/** How many update sequences a session reserves in storage at a time (see `SequenceReservation`). */
export const SEQUENCE_BLOCK = 10_000;

/** How soon a reservation that failed (storage away) is tried again when no update asks for it. */
const RESERVE_RETRY_MS = 1_000;

/**
 * Where a session's sequence numbers stand in storage. Numbers up to `reserved` are durably
 * reserved, so an owner that starts after a crash begins above every number this one issued; the
 * next block is reserved ahead of need, and an update that would pass the reservation waits for it.
 */
interface SequenceReservation {
  /** The last sequence issued before this session opened: numbering continues above it. */
  start: number;
  /** The highest sequence reserved in storage so far. */
  reserved: number;
  /** How many more to reserve at a time; the next block is asked for when half of this one is left. */
  block: number;
  /** Durably reserves sequences up to `upTo`. */
  reserve: (upTo: number) => Promise<void>;
}

export interface UpdateStreamOptions {
  sequences?: SequenceReservation;
  /** Told when a subscriber throws: it is cut off from nothing and the turn never sees it. */
  onSubscriberError?: (error: unknown) => void;
  /** Told when the number of subscribers changes (an idle session with none may be closed). */
  onSubscribers?: (count: number) => void;
  /** Told after every update is issued: progress for the no-progress watchdog. */
  onEmit?: () => void;
}

/**
 * A session's sequencer (RT-19, RT-20): numbers updates without gaps, keeps the last 512 in a ring,
 * folds them into the live view and pushes them to the session and runtime streams. A subscriber
 * that throws is isolated and never reaches the turn or other subscribers.
 */
export class UpdateStream {
  private sequence: number;
  /** The first sequence of this opening: anything older was issued before it and is not in the ring. */
  private readonly first: number;
  private reserved: number;
  private reserving = false;
  private readonly block: number;
  /** Updates past the reservation, held until it is durable; in order. */
  private readonly held: UpdateEnvelope[] = [];
  private readonly ring: (UpdateEnvelope | undefined)[] = new Array<UpdateEnvelope | undefined>(REPLAY_CAPACITY);
  private readonly subject = new Subject<UpdateEnvelope>();
  private subscribers = 0;
  private sealed = false;
  readonly updates$: Observable<UpdateEnvelope>;

  constructor(
    private readonly sessionId: string,
    private readonly live: LiveView,
    private readonly runtimeSubject: Subject<UpdateEnvelope>,
    private readonly now: () => number,
    private readonly options: UpdateStreamOptions = {},
  ) {
    const sequences = options.sequences;
    this.sequence = sequences?.start ?? 0;
    this.first = this.sequence + 1;
    this.reserved = sequences?.reserved ?? Number.MAX_SAFE_INTEGER;
    this.block = sequences?.block ?? SEQUENCE_BLOCK;
    this.updates$ = isolated(this.subject, {
      onError: (error) => options.onSubscriberError?.(error),
      onCount: (delta) => {
        this.subscribers += delta;
        options.onSubscribers?.(this.subscribers);
      },
    });
  }

  get lastSequence(): number {
    return this.sequence;
  }

  /** The last sequence issued before this opening of the session. */
  get openedAfter(): number {
    return this.first - 1;
  }

  get subscriberCount(): number {
    return this.subscribers;
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
    if (this.sequence > this.reserved - this.block / 2) this.reserveMore();
    if (this.sequence > this.reserved || this.held.length > 0) this.held.push(envelope);
    else this.deliver(envelope);
    this.options.onEmit?.();
    return envelope;
  }

  /** Updates after `afterSequence`, or `SnapshotRequired` when some of them are not in the ring (left it, or were issued before this opening). */
  replay(afterSequence: number): ReplayResult {
    const delivered = this.sequence - this.held.length;
    const oldest = Math.max(this.first, delivered - REPLAY_CAPACITY + 1);
    if (afterSequence + 1 < oldest || afterSequence > delivered) return { ok: false, error: { code: 'SnapshotRequired' } };
    const updates: UpdateEnvelope[] = [];
    for (let s = afterSequence + 1; s <= delivered; s++) updates.push(this.ring[s % REPLAY_CAPACITY]!);
    return { ok: true, updates };
  }

  complete(): void {
    this.subject.complete();
  }

  /** The lease is being given up with the last number issued: an announcement still pending (issue 26) is dropped, not numbered. */
  seal(): void {
    this.sealed = true;
  }

  get isSealed(): boolean {
    return this.sealed;
  }

  private deliver(envelope: UpdateEnvelope): void {
    this.ring[envelope.sequence % REPLAY_CAPACITY] = envelope;
    this.live.fold(envelope);
    this.subject.next(envelope);
    this.runtimeSubject.next(envelope);
  }

  private reserveMore(): void {
    const sequences = this.options.sequences;
    if (!sequences || this.reserving) return;
    this.reserving = true;
    // Far enough ahead to cover what was issued while the last attempt failed.
    const upTo = Math.max(this.reserved, this.sequence) + this.block;
    sequences.reserve(upTo).then(
      () => {
        this.reserving = false;
        this.reserved = Math.max(this.reserved, upTo);
        this.release();
      },
      // Storage is away: keep holding (nothing is delivered that a later owner could reuse) and try again.
      () => {
        this.reserving = false;
        if (this.held.length > 0) setTimeout(() => this.reserveMore(), RESERVE_RETRY_MS).unref();
      },
    );
  }

  /** Delivers held updates the reservation now covers. */
  private release(): void {
    while (this.held.length > 0 && this.held[0]!.sequence <= this.reserved) this.deliver(this.held.shift()!);
  }
}
