import { connect, type ChannelModel, type ConfirmChannel, type Options } from 'amqplib';
import { TurnchartError } from '../protocol/errors.js';
import { messageOf } from '../protocol/error-message.js';

export interface AmqpLinkOptions {
  /** `amqp://user:pass@host:port/vhost`. */
  url: string;
  /** Shown to the broker (management UI) and in warnings. */
  name: string;
  warn?: (message: string) => void;
  /** Reconnect backoff after the connection drops: doubles from `minMs` up to `maxMs`. */
  reconnect?: { minMs?: number; maxMs?: number };
}

/** Declares exchanges, queues and consumers on a fresh channel; run again after every reconnect. */
export type ChannelSetup = (channel: ConfirmChannel) => Promise<void>;

/**
 * One connection to RabbitMQ with one confirm channel, kept up: when the broker or the network
 * drops it, the link reconnects with backoff and runs every registered setup again (declarations
 * are idempotent; consumers must be re-registered on a new channel). Publishing waits for the
 * broker's confirm, so a resolved `publish` means the broker has taken responsibility for the message.
 */
export class AmqpLink {
  private model: ChannelModel | null = null;
  private current: ConfirmChannel | null = null;
  private readonly setups: ChannelSetup[] = [];
  private closing = false;
  private reconnected = 0;
  private ready: Promise<void>;
  private readonly warn: (message: string) => void;

  private constructor(private readonly options: AmqpLinkOptions) {
    this.warn = options.warn ?? ((message) => console.warn(message));
    this.ready = Promise.resolve();
  }

  /** Connects once; a broker that cannot be reached now is a `TransportUnavailable` error. */
  static async open(options: AmqpLinkOptions): Promise<AmqpLink> {
    const link = new AmqpLink(options);
    try {
      await link.connectOnce();
    } catch (error) {
      throw new TurnchartError('TransportUnavailable', `RabbitMQ at ${redact(options.url)} cannot be reached: ${messageOf(error)}`);
    }
    return link;
  }

  /** The live channel; null while reconnecting. */
  get channel(): ConfirmChannel | null {
    return this.current;
  }

  /** Times the connection was lost and made again (issue 27: `turnchart_broker_reconnects_total`). */
  get reconnects(): number {
    return this.reconnected;
  }

  /** Runs `setup` on the current channel now and on every new channel after a reconnect. */
  async onChannel(setup: ChannelSetup): Promise<void> {
    this.setups.push(setup);
    await this.ready;
    if (this.current) await setup(this.current);
  }

  /** Publishes JSON and resolves once the broker confirms it; waits through a reconnect. */
  async publish(exchange: string, routingKey: string, body: unknown, options: Options.Publish = {}): Promise<void> {
    const content = Buffer.from(JSON.stringify(body));
    for (;;) {
      await this.ready;
      const channel = this.current;
      if (this.closing) throw new TurnchartError('TransportUnavailable', 'the AMQP link is closed');
      if (!channel) continue;
      try {
        await new Promise<void>((resolve, reject) => {
          channel.publish(exchange, routingKey, content, { persistent: true, contentType: 'application/json', ...options }, (error) =>
            error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(),
          );
        });
        return;
      } catch (error) {
        if (this.current === channel && !this.closing) throw new TurnchartError('TransportUnavailable', `publish to ${exchange} was not confirmed: ${messageOf(error)}`);
        // The channel went away under the message: publish it again on the next one.
      }
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const model = this.model;
    const channel = this.current;
    this.model = null;
    this.current = null;
    // The channel first: its acknowledgements still buffered go out before it closes, while the
    // connection's own close could overtake them (frames of different channels are interleaved).
    await channel?.close().catch(() => undefined);
    await model?.close().catch(() => undefined);
  }

  private async connectOnce(): Promise<void> {
    const model = await connect(this.options.url, { clientProperties: { connection_name: this.options.name } });
    model.on('error', (error: Error) => this.warn(`AMQP ${this.options.name}: ${error.message}`));
    try {
      const channel = await model.createConfirmChannel();
      channel.on('error', (error: Error) => this.warn(`AMQP ${this.options.name} channel: ${error.message}`));
      channel.on('close', () => {
        // A channel closed by the broker (a failed declaration, say) while the connection lives: start over.
        if (this.model === model && !this.closing) void model.close().catch(() => undefined);
      });
      for (const setup of this.setups) await setup(channel);
      model.on('close', () => this.dropped(model));
      this.model = model;
      this.current = channel;
    } catch (error) {
      await model.close().catch(() => undefined);
      throw error;
    }
  }

  private dropped(model: ChannelModel): void {
    if (this.model !== model || this.closing) return;
    this.model = null;
    this.current = null;
    this.warn(`AMQP ${this.options.name}: connection lost, reconnecting`);
    this.ready = this.reconnect();
  }

  private async reconnect(): Promise<void> {
    const minMs = this.options.reconnect?.minMs ?? 100;
    const maxMs = this.options.reconnect?.maxMs ?? 5_000;
    for (let wait = minMs; !this.closing; wait = Math.min(maxMs, wait * 2)) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (this.closing) return;
      try {
        await this.connectOnce();
        this.reconnected += 1;
        return;
      } catch (error) {
        this.warn(`AMQP ${this.options.name}: reconnect failed (${messageOf(error)}), next try in ${Math.min(maxMs, wait * 2)} ms`);
      }
    }
  }
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
