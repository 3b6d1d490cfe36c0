import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { TaskStorage } from '../../storage/task-storage.js';
import { AmqpLink } from '../transport/amqp-link.js';
import { EventOrder, type FetchRange, type Gap, type PositionStore } from './event-order.js';
import { taskEventEnvelopeSchema, toEnvelope, type TaskEventEnvelope } from './task-envelope.js';
import { declareTaskTopology, eventRoutingKey, taskTopology } from './task-topology.js';
import { messageOf } from '../protocol/error-message.js';

export type { FetchRange, Gap, PositionStore };

/** Positions in the task storage (SQLite or PostgreSQL), under the consumer's own name. */
export function storagePositions(tasks: TaskStorage, consumerId: string, now: () => number = Date.now): PositionStore {
  return {
    load: (sessionId) => tasks.loadPosition(consumerId, sessionId),
    save: (sessionId, sequence) => tasks.savePosition(consumerId, sessionId, sequence, now()),
  };
}

/** The missing range read from the task storage, where every published event was stored first. */
export function storageFetcher(tasks: TaskStorage): FetchRange {
  return async (sessionId, afterSequence, upToSequence) =>
    (await tasks.listTaskEvents(sessionId, { afterSequence, ...(upToSequence !== undefined && { upToSequence }) })).map(toEnvelope);
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

interface Delivery {
  message: ConsumeMessage;
  channel: ConfirmChannel;
}

/**
 * LC-3's consumer on RabbitMQ: it parses each delivery and hands it to the ordering
 * (`EventOrder`, which handles each session's events strictly in sequence order, drops duplicates
 * and fills gaps), acknowledging or requeueing on the channel the delivery came on. A delivery is
 * acknowledged only once its event is handled and the new position saved.
 */
export async function createTaskEventConsumer(options: TaskEventConsumerOptions): Promise<TaskEventConsumer> {
  const warn = options.warn ?? ((message: string) => console.warn(`turnchart consumer: ${message}`));
  const link = await AmqpLink.open({ url: options.amqpUrl, name: options.name ?? 'turnchart-task-consumer', warn });
  const consumer = new Consumer(options, link, warn);
  await link.onChannel((channel) => consumer.setUp(channel));
  return consumer;
}

class Consumer implements TaskEventConsumer {
  private readonly order: EventOrder<Delivery>;

  constructor(
    private readonly options: TaskEventConsumerOptions,
    private readonly link: AmqpLink,
    private readonly warn: (message: string) => void,
  ) {
    this.order = new EventOrder<Delivery>(
      { positions: options.positions, fetchRange: options.fetchRange, handle: options.handle, onGap: options.onGap, onDuplicate: options.onDuplicate, warn },
      {
        ack: (deliveries) => ack(link, deliveries),
        // A delivery from a channel since replaced is redelivered by the broker anyway.
        requeue: ({ message, channel }) => {
          if (link.channel === channel) channel.nack(message, false, true);
        },
      },
    );
  }

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

  lastProcessed(sessionId: string): Promise<number> {
    return this.order.lastProcessed(sessionId);
  }

  catchUp(sessionId: string): Promise<void> {
    return this.order.catchUp(sessionId);
  }

  async close(): Promise<void> {
    await this.link.close();
    await this.order.settled();
  }

  private onMessage(delivery: Delivery): void {
    let event: TaskEventEnvelope;
    try {
      const parsed = taskEventEnvelopeSchema.safeParse(JSON.parse(delivery.message.content.toString('utf8')));
      if (!parsed.success) throw new Error(parsed.error.message);
      event = parsed.data;
    } catch (error) {
      this.warn(`dropped a message that is not a task event: ${messageOf(error)}`);
      return ack(this.link, [delivery]);
    }
    void this.order.receive(event, delivery);
  }
}

function ack(link: AmqpLink, deliveries: readonly Delivery[]): void {
  for (const { message, channel } of deliveries) if (link.channel === channel) channel.ack(message);
}
