import type { TaskStorage } from '../../storage/task-storage.js';
import type { AmqpLink } from '../transport/amqp-link.js';
import { toEnvelope } from './task-envelope.js';
import { eventRoutingKey, type TaskTopology } from './task-topology.js';
import { messageOf } from '../protocol/error-message.js';

export interface OutboxRelayOptions {
  /** Only rows at least this old are republished: a live journal is probably publishing younger ones itself. */
  graceMs: number;
  /** How often the relay looks. */
  intervalMs: number;
  batch: number;
}

export const DEFAULT_RELAY: OutboxRelayOptions = { graceMs: 2_000, intervalMs: 2_000, batch: 500 };

/**
 * Publishes the events whose publication never got confirmed — their worker died between storing
 * and publishing, or the broker was away — oldest first, and marks them published. A row a live
 * worker publishes at the same moment goes out twice; consumers drop the duplicate by sequence.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;

  constructor(
    private readonly storage: TaskStorage,
    private readonly link: AmqpLink,
    private readonly topology: TaskTopology,
    private readonly now: () => number,
    private readonly warn: (message: string) => void,
    private readonly options: OutboxRelayOptions = DEFAULT_RELAY,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs);
    this.timer.unref();
  }

  /** One pass; resolves with how many events it published. A pass under way is shared. */
  sweep(graceMs = this.options.graceMs): Promise<number> {
    this.running ??= this.pass(graceMs)
      .catch((error: unknown) => {
        this.warn(`outbox relay: ${messageOf(error)}`);
        return 0;
      })
      .finally(() => (this.running = null));
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private async pass(graceMs: number): Promise<number> {
    const rows = await this.storage.listUnpublished(this.now() - graceMs, this.options.batch);
    for (const row of rows) {
      await this.link.publish(this.topology.eventsExchange, eventRoutingKey(row.taskId), toEnvelope(row), { messageId: row.messageId });
      await this.storage.markPublished(row.taskId, [row.sequence], this.now());
    }
    return rows.length;
  }
}
