import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { TaskStorage } from '../../storage/task-storage.js';
import { AmqpLink } from '../transport/amqp-link.js';
import { taskEventEnvelopeSchema, toEnvelope, type TaskEventEnvelope } from './task-envelope.js';
import { declareTaskTopology, eventRoutingKey, taskTopology } from './task-topology.js';

/** Where a consumer keeps `last_processed_sequence` per task session, so a restart resumes de-duplication (LC-3). */
export interface PositionStore {
  load(sessionId: string): Promise<number>;
  save(sessionId: string, sequence: number): Promise<void>;
}

/** Positions in the task storage (SQLite or PostgreSQL), under the consumer's own name. */
export function storagePositions(tasks: TaskStorage, consumerId: string, now: () => number = Date.now): PositionStore {
  return {
    load: (sessionId) => tasks.loadPosition(consumerId, sessionId),
    save: (sessionId, sequence) => tasks.savePosition(consumerId, sessionId, sequence, now()),
  };
}

/** Events of a session after `afterSequence`, up to `upToSequence` when given, in order. */
export type FetchRange = (sessionId: string, afterSequence: number, upToSequence?: number) => Promise<TaskEventEnvelope[]>;

/** The missing range read from the task storage, where every published event was stored first. */
export function storageFetcher(tasks: TaskStorage): FetchRange {
  return async (sessionId, afterSequence, upToSequence) =>
    (await tasks.listTaskEvents(sessionId, { afterSequence, ...(upToSequence !== undefined && { upToSequence }) })).map(toEnvelope);
}

export interface Gap {
  sessionId: string;
  /** The first and last missing sequence. */
  from: number;
  to: number;
}

export interface TaskEventConsumerOptions {
  amqpUrl: string;
  /** A durable queue of this name keeps events published while the consumer is down; without one, a queue lives with the connection. */
  queue?: string;
  /** Task sessions to follow; every task's when omitted. */
  sessions?: string[];
  positions: PositionStore;
  fetchRange: FetchRange;
  /** Called once per event, in sequence order per session; an exception leaves the event unprocessed (it is delivered again). */
  handle: (event: TaskEventEnvelope) => void | Promise<void>;
  /** A gap was seen (the missing range is fetched and handled before the event after it). */
  onGap?: (gap: Gap) => void;
  onDuplicate?: (event: TaskEventEnvelope) => void;
  warn?: (message: string) => void;
  name?: string;
  /** The broker names' namespace (`turnchart` by default). */
  namespace?: string;
}

export interface TaskEventConsumer {
  /** The last sequence handled for a session (0 before the first). */
  lastProcessed(sessionId: string): Promise<number>;
  /** Handles whatever storage holds after the session's position: how a consumer back from a restart closes the tail. */
  catchUp(sessionId: string): Promise<void>;
  close(): Promise<void>;
}

/** One session's position and the events that arrived ahead of it. */
interface SessionCursor {
  last: number;
  /** sequence → its event and the deliveries carrying it, acknowledged once it is handled. */
  ahead: Map<number, { event: TaskEventEnvelope; deliveries: Delivery[] }>;
}

interface Delivery {
  message: ConsumeMessage;
  channel: ConfirmChannel;
}

/**
 * LC-3's consumer side. Events of each session are handled strictly in sequence order:
 * one at or below `last_processed_sequence` is a duplicate (acknowledged, not handled); one that
 * arrives ahead is held, the gap reported and the missing range fetched (from storage, by default)
 * and handled first. A delivery is acknowledged only once its event is handled and the new position
 * saved, so a consumer that dies loses nothing: RabbitMQ delivers again and the saved position drops
 * what was already handled.
 */
export async function createTaskEventConsumer(options: TaskEventConsumerOptions): Promise<TaskEventConsumer> {
  const warn = options.warn ?? ((message: string) => console.warn(`turnchart consumer: ${message}`));
  const link = await AmqpLink.open({ url: options.amqpUrl, name: options.name ?? 'turnchart-task-consumer', warn });
  const consumer = new Consumer(options, link, warn);
  await link.onChannel((channel) => consumer.setUp(channel));
  return consumer;
}

class Consumer implements TaskEventConsumer {
  private readonly cursors = new Map<string, Promise<SessionCursor>>();
  /** Per session, the work in progress: deliveries are handled one after another. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly options: TaskEventConsumerOptions,
    private readonly link: AmqpLink,
    private readonly warn: (message: string) => void,
  ) {}

  async setUp(channel: ConfirmChannel): Promise<void> {
    const topology = taskTopology(this.options.namespace);
    await declareTaskTopology(channel, topology);
    const { queue } = this.options.queue
      ? await channel.assertQueue(this.options.queue, { durable: true })
      : await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    const keys = this.options.sessions ? this.options.sessions.map(eventRoutingKey) : ['task.*'];
    for (const key of keys) await channel.bindQueue(queue, topology.eventsExchange, key);
    // Events held while a gap is filled stay unacknowledged: room for them.
    await channel.prefetch(1_000);
    await channel.consume(queue, (message) => message && this.onMessage({ message, channel }));
  }

  async lastProcessed(sessionId: string): Promise<number> {
    await this.chains.get(sessionId);
    return (await this.cursor(sessionId)).last;
  }

  catchUp(sessionId: string): Promise<void> {
    return this.serially(sessionId, async () => {
      const cursor = await this.cursor(sessionId);
      for (const event of await this.options.fetchRange(sessionId, cursor.last)) await this.handleInOrder(cursor, event);
    });
  }

  async close(): Promise<void> {
    await this.link.close();
    await Promise.allSettled([...this.chains.values()]);
  }

  private onMessage(delivery: Delivery): void {
    let event: TaskEventEnvelope;
    try {
      const parsed = taskEventEnvelopeSchema.safeParse(JSON.parse(delivery.message.content.toString('utf8')));
      if (!parsed.success) throw new Error(parsed.error.message);
      event = parsed.data;
    } catch (error) {
      this.warn(`dropped a message that is not a task event: ${error instanceof Error ? error.message : String(error)}`);
      return ack(this.link, [delivery]);
    }
    void this.serially(event.session_id, () => this.receive(event, delivery)).catch(async (error: unknown) => {
      this.warn(`session ${event.session_id}: event ${event.payload.sequence} left for redelivery (${error instanceof Error ? error.message : String(error)})`);
      await this.forget(event, delivery);
      if (this.link.channel === delivery.channel) delivery.channel.nack(delivery.message, false, true);
    });
  }

  private async receive(event: TaskEventEnvelope, delivery: Delivery): Promise<void> {
    const sessionId = event.session_id;
    const cursor = await this.cursor(sessionId);
    const sequence = event.payload.sequence;
    if (sequence <= cursor.last) {
      this.options.onDuplicate?.(event);
      return ack(this.link, [delivery]);
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
  private async drain(cursor: SessionCursor): Promise<void> {
    for (let next = cursor.ahead.get(cursor.last + 1); next; next = cursor.ahead.get(cursor.last + 1)) {
      await this.handleInOrder(cursor, next.event);
    }
  }

  /** Handles `event` if it is the next one (an older one is a duplicate); then its deliveries are acknowledged. */
  private async handleInOrder(cursor: SessionCursor, event: TaskEventEnvelope): Promise<void> {
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
    if (held) ack(this.link, held.deliveries);
  }

  /** A delivery handed back to the broker is no longer held here. */
  private async forget(event: TaskEventEnvelope, delivery: Delivery): Promise<void> {
    const cursor = await this.cursor(event.session_id).catch(() => null);
    const held = cursor?.ahead.get(event.payload.sequence);
    if (!held) return;
    held.deliveries = held.deliveries.filter((d) => d !== delivery);
    if (held.deliveries.length === 0) cursor!.ahead.delete(event.payload.sequence);
  }

  private cursor(sessionId: string): Promise<SessionCursor> {
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

function ack(link: AmqpLink, deliveries: Delivery[]): void {
  for (const { message, channel } of deliveries) if (link.channel === channel) channel.ack(message);
}
