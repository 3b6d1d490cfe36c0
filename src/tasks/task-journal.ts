import { randomUUID } from 'node:crypto';
import type { TaskChange, TaskEventRow, TaskFence, TaskStorage } from '../../storage/task-storage.js';
import type { AmqpLink } from '../transport/amqp-link.js';
import { toEnvelope, type TaskEventType } from './task-envelope.js';
import { eventRoutingKey, type TaskTopology } from './task-topology.js';
import { messageOf } from '../protocol/error-message.js';
import type { Warn } from '../protocol/log-fields.js';

/** Sends one stored event to its consumers; resolves once the broker has confirmed it. */
export type EventSender = (row: TaskEventRow) => Promise<void>;

/** Events to the topic exchange, routed by session, with the broker's confirm. */
export function amqpSender(link: AmqpLink, topology: TaskTopology): EventSender {
  return (row) => link.publish(topology.eventsExchange, eventRoutingKey(row.taskId), toEnvelope(row), { messageId: row.messageId });
}

/**
 * One task's events, in order (the outbox pattern): each is stored with the next sequence — and any
 * change to the task row — in one transaction, then published with the broker's confirm, then
 * marked published. A crash between the write and the mark leaves the row unpublished; the relay
 * publishes it again (at least once: consumers drop what they have seen by sequence).
 *
 * Writes are chained so sequences follow the order events were asked for. The first write that
 * fails stops the journal: every later append rejects with that error, and `failed` settles.
 */
export class TaskJournal {
  private tail: Promise<unknown> = Promise.resolve();
  private failure: unknown = null;
  private publishes: Promise<void> = Promise.resolve();
  readonly failed: Promise<unknown>;
  private fail!: (error: unknown) => void;

  constructor(
    readonly taskId: string,
    private readonly storage: TaskStorage,
    private readonly send: EventSender,
    private readonly fence: TaskFence | undefined,
    private readonly now: () => number,
    private readonly warn: Warn,
  ) {
    this.failed = new Promise((resolve) => (this.fail = resolve));
  }

  /** Stores the event (and its change to the task row); resolves once it is durable, not once it is published. */
  append(eventType: TaskEventType, data: Record<string, unknown>, change: TaskChange | null = null): Promise<TaskEventRow> {
    const write = this.tail.then(async () => {
      if (this.failure) throw this.failure;
      const event = { messageId: randomUUID(), eventType, data, createdAtMs: this.now() };
      try {
        const row = await this.storage.appendTaskEvent(this.taskId, event, change, this.fence);
        this.publishes = this.publishes.then(() => this.publish(row));
        return row;
      } catch (error) {
        this.failure ??= error;
        this.fail(error);
        throw error;
      }
    });
    this.tail = write.catch(() => undefined);
    return write;
  }

  /** Resolves once everything appended so far is stored (or the journal has failed). */
  async durable(): Promise<void> {
    await this.tail;
  }

  /** Resolves once everything appended so far was published or left to the relay. */
  async settled(): Promise<void> {
    await this.tail;
    await this.publishes;
  }

  /** A failed publish is no loss: the row stays unpublished and the relay sends it later. */
  private async publish(row: TaskEventRow): Promise<void> {
    try {
      await this.send(row);
      await this.storage.markPublished(row.taskId, [row.sequence], this.now());
    } catch (error) {
      this.warn(`task ${row.taskId}: event ${row.sequence} left to the outbox relay (${messageOf(error)})`, { taskId: row.taskId, ...(this.fence && { sessionId: this.fence.sessionId }) });
    }
  }
}
