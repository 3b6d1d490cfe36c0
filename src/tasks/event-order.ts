import type { TaskEventEnvelope } from './task-envelope.js';
import { messageOf } from '../protocol/error-message.js';

/** Where a consumer keeps `last_processed_sequence` per task session, so a restart resumes de-duplication (LC-3). */
export interface PositionStore {
  load(sessionId: string): Promise<number>;
  save(sessionId: string, sequence: number): Promise<void>;
}

/** Events of a session after `afterSequence`, up to `upToSequence` when given, in order. */
export type FetchRange = (sessionId: string, afterSequence: number, upToSequence?: number) => Promise<TaskEventEnvelope[]>;

export interface Gap {
  sessionId: string;
  /** The first and last missing sequence. */
  from: number;
  to: number;
}

/** What the ordering needs from the transport: to settle the deliveries it was given. */
export interface DeliverySettler<D> {
  /** The deliveries' event is handled (or was already): the broker may forget them. */
  ack(deliveries: readonly D[]): void;
  /** The delivery's event was not handled: the broker is to deliver it again. */
  requeue(delivery: D): void;
}

export interface EventOrderOptions {
  positions: PositionStore;
  fetchRange: FetchRange;
  /** Called once per event, in sequence order per session; an exception leaves the event unprocessed (it is delivered again). */
  handle: (event: TaskEventEnvelope) => void | Promise<void>;
  /** A gap was seen (the missing range is fetched and handled before the event after it). */
  onGap?: (gap: Gap) => void;
  onDuplicate?: (event: TaskEventEnvelope) => void;
  warn: (message: string) => void;
}

/** One session's position and the events that arrived ahead of it. */
interface SessionCursor<D> {
  last: number;
  /** sequence → its event and the deliveries carrying it, acknowledged once it is handled. */
  ahead: Map<number, { event: TaskEventEnvelope; deliveries: D[] }>;
}

/**
 * LC-3's consumer side, apart from any broker: events of each session are handled strictly in
 * sequence order. One at or below `last_processed_sequence` is a duplicate (acknowledged, not
 * handled); one that arrives ahead is held, the gap reported and the missing range fetched (from
 * storage, by default) and handled first. A delivery is acknowledged only once its event is handled
 * and the new position saved, so a consumer that dies loses nothing: the broker delivers again and
 * the saved position drops what was already handled. A delivery whose handling failed is handed
 * back for redelivery. `D` is whatever the transport calls a delivery; the ordering only hands it back.
 */
export class EventOrder<D> {
  private readonly cursors = new Map<string, Promise<SessionCursor<D>>>();
  /** Per session, the work in progress: deliveries are handled one after another. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly options: EventOrderOptions,
    private readonly settler: DeliverySettler<D>,
  ) {}

  /** Takes one delivery of `event`; resolves once it is handled, held, dropped as a duplicate, or handed back. */
  receive(event: TaskEventEnvelope, delivery: D): Promise<void> {
    return this.serially(event.session_id, () => this.place(event, delivery)).catch(async (error: unknown) => {
      this.options.warn(`session ${event.session_id}: event ${event.payload.sequence} left for redelivery (${messageOf(error)})`);
      await this.forget(event, delivery);
      this.settler.requeue(delivery);
    });
  }

  /** The last sequence handled for a session (0 before the first). */
  async lastProcessed(sessionId: string): Promise<number> {
    await this.chains.get(sessionId);
    return (await this.cursor(sessionId)).last;
  }

  /** Handles whatever the fetcher has after the session's position: how a consumer back from a restart closes the tail. */
  catchUp(sessionId: string): Promise<void> {
    return this.serially(sessionId, async () => {
      const cursor = await this.cursor(sessionId);
      for (const event of await this.options.fetchRange(sessionId, cursor.last)) await this.handleInOrder(cursor, event);
    });
  }

  /** Resolves once the work under way for every session is over. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.chains.values()]);
  }

  private async place(event: TaskEventEnvelope, delivery: D): Promise<void> {
    const sessionId = event.session_id;
    const cursor = await this.cursor(sessionId);
    const sequence = event.payload.sequence;
    if (sequence <= cursor.last) {
      this.options.onDuplicate?.(event);
      return this.settler.ack([delivery]);
    }
    const held = cursor.ahead.get(sequence);
    if (held) held.deliveries.push(delivery);
    else cursor.ahead.set(sequence, { event, deliveries: [delivery] });
    if (sequence > cursor.last + 1) {
      // A gap: the missing range is in storage (every event is stored before it is published).
      this.options.onGap?.({ sessionId, from: cursor.last + 1, to: sequence - 1 });
      for (const missing of await this.options.fetchRange(sessionId, cursor.last, sequence - 1)) await this.handleInOrder(cursor, missing);
    }
    await this.drain(cursor);
  }

  /** Handles the events held ahead that are next in line. */
  private async drain(cursor: SessionCursor<D>): Promise<void> {
    for (let next = cursor.ahead.get(cursor.last + 1); next; next = cursor.ahead.get(cursor.last + 1)) {
      await this.handleInOrder(cursor, next.event);
    }
  }

  /** Handles `event` if it is the next one (an older one is a duplicate); then its deliveries are acknowledged. */
  private async handleInOrder(cursor: SessionCursor<D>, event: TaskEventEnvelope): Promise<void> {
    const sequence = event.payload.sequence;
    const held = cursor.ahead.get(sequence);
    if (sequence === cursor.last + 1) {
      await this.options.handle(event);
      await this.options.positions.save(event.session_id, sequence);
      cursor.last = sequence;
    } else if (sequence > cursor.last + 1) {
      return;
    }
    cursor.ahead.delete(sequence);
    if (held) this.settler.ack(held.deliveries);
  }

  /** A delivery handed back to the broker is no longer held here. */
  private async forget(event: TaskEventEnvelope, delivery: D): Promise<void> {
    const cursor = await this.cursor(event.session_id).catch(() => null);
    const held = cursor?.ahead.get(event.payload.sequence);
    if (!held) return;
    held.deliveries = held.deliveries.filter((d) => d !== delivery);
    if (held.deliveries.length === 0) cursor!.ahead.delete(event.payload.sequence);
  }

  private cursor(sessionId: string): Promise<SessionCursor<D>> {
    let cursor = this.cursors.get(sessionId);
    if (!cursor) {
      cursor = this.options.positions.load(sessionId).then((last) => ({ last, ahead: new Map() }));
      this.cursors.set(sessionId, cursor);
      // A position that could not be read is read again next time.
      cursor.catch(() => this.cursors.delete(sessionId));
    }
    return cursor;
  }

  private serially(sessionId: string, work: () => Promise<void>): Promise<void> {
    const run = (this.chains.get(sessionId) ?? Promise.resolve()).then(work);
    this.chains.set(sessionId, run.catch(() => undefined));
    return run;
  }
}
