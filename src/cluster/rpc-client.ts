import { randomUUID } from 'node:crypto';
import type { ConfirmChannel, ConsumeMessage, Message } from 'amqplib';
import { ApiError } from '../host/errors.js';
import type { AmqpLink } from '../transport/amqp-link.js';
import { parseBody, replySchema, type CommandReply, type CommandRequest } from './messages.js';
import { commandQueueOf } from './names.js';
import { messageOf } from '../protocol/error-message.js';

interface Pending {
  resolve(reply: CommandReply): void;
  reject(error: ApiError): void;
  timer: NodeJS.Timeout;
  /** What to tell the caller when the owner has no queue (it died and its lease still runs). */
  unavailable: () => ApiError;
}

export interface CallOptions {
  timeoutMs: number;
  /** How long the owner's lease still runs: told to a client whose command found no owner to take it. */
  retryAfterMs: number;
}

/**
 * Request and reply over RabbitMQ: a command goes to the owner's exclusive queue, mandatory, with a
 * `correlationId` and this host's reply queue as `replyTo`, and expires when the caller stops
 * waiting, so an owner never runs a command nobody waits for any more. No queue for the owner
 * (the broker returns the message) is `OwnerUnavailable`; no reply in time is `OwnerTimeout`.
 */
export class RpcClient {
  private replyQueue: string | null = null;
  private readonly pending = new Map<string, Pending>();
  private closed = false;

  private constructor(private readonly link: AmqpLink) {}

  static async start(link: AmqpLink): Promise<RpcClient> {
    const client = new RpcClient(link);
    await link.onChannel((channel) => client.setup(channel));
    return client;
  }

  async call(ownerId: string, request: CommandRequest, options: CallOptions): Promise<CommandReply> {
    const replyTo = this.replyQueue;
    if (this.closed || replyTo === null) throw new ApiError('TransportUnavailable', 'this host has no connection to the cluster broker right now');
    const correlationId = randomUUID();
    const unavailable = () =>
      new ApiError('OwnerUnavailable', `the host that holds session '${'sessionId' in request ? request.sessionId : '?'}' cannot be reached`, {
        retryAfterMs: Math.max(0, Math.round(options.retryAfterMs)),
      });
    const reply = new Promise<CommandReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(correlationId);
        reject(new ApiError('OwnerTimeout', `the host that holds the session did not answer within ${options.timeoutMs} ms; the command may have taken effect`));
      }, options.timeoutMs);
      this.pending.set(correlationId, { resolve, reject, timer, unavailable });
    });
    try {
      await this.link.publish('', commandQueueOf(ownerId), request, {
        correlationId,
        replyTo,
        mandatory: true,
        persistent: false,
        expiration: String(options.timeoutMs),
        type: request.op === 'command' ? request.name : request.op,
      });
    } catch (error) {
      this.settle(correlationId)?.reject(new ApiError('TransportUnavailable', messageOf(error)));
    }
    return reply;
  }

  /** Every call still waiting fails: the host is leaving the cluster. */
  close(): void {
    this.closed = true;
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(new ApiError('TransportUnavailable', 'this host is leaving the cluster'));
  }

  private async setup(channel: ConfirmChannel): Promise<void> {
    // A new reply queue on every channel: replies still on their way to the old one are lost, and their calls time out.
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    await channel.consume(queue, (message) => message && this.answered(message), { noAck: true });
    channel.on('return', (message: Message) => this.returned(message));
    this.replyQueue = queue;
  }

  private answered(message: ConsumeMessage): void {
    const pending = this.settle(String(message.properties.correlationId ?? ''));
    if (!pending) return; // too late: the caller has been told OwnerTimeout
    const reply = replySchema.safeParse(parseBody(message.content));
    if (reply.success) pending.resolve(reply.data);
    else pending.reject(new ApiError('InternalError', 'the host that holds the session answered with an unreadable reply'));
  }

  private returned(message: Message): void {
    const pending = this.settle(String(message.properties.correlationId ?? ''));
    pending?.reject(pending.unavailable());
  }

  private settle(correlationId: string): Pending | undefined {
    const pending = this.pending.get(correlationId);
    if (!pending) return undefined;
    this.pending.delete(correlationId);
    clearTimeout(pending.timer);
    return pending;
  }
}
