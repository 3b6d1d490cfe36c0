import { randomUUID } from 'node:crypto';
import type { ConfirmChannel, ConsumeMessage, Message } from 'amqplib';
import { ApiError } from '../host/errors.js';
import type { AmqpLink } from '../transport/amqp-link.js';
import { parseBody, replySchema, type CommandReply, type CommandRequest } from './messages.js';
import { commandQueueOf, ownerOfCommandQueue, PROBE_MESSAGE } from './names.js';
import { messageOf } from '../protocol/error-message.js';

interface Pending {
  ownerId: string;
  resolve(reply: CommandReply): void;
  reject(error: ApiError): void;
  timer: NodeJS.Timeout;
  /** What to tell the caller when the owner has no queue (it died and its lease still runs). */
  unavailable: () => ApiError;
}

/** The calls waiting on one owner, and the probe that checks its queue is still there meanwhile. */
interface Watch {
  calls: Set<string>;
  timer: NodeJS.Timeout;
  /** A probe not yet confirmed: the next waits for it, so none pile up while the broker is away. */
  probing: boolean;
}

/** How a routed call ended: the owner answered (whatever its answer), or why it did not. */
type RouteResult = 'answered' | 'owner_unavailable' | 'owner_timeout' | 'transport_unavailable' | 'unreadable_reply';

function routeResultOf(error: unknown): RouteResult {
  const code = error instanceof ApiError ? error.code : null;
  if (code === 'OwnerUnavailable') return 'owner_unavailable';
  if (code === 'OwnerTimeout') return 'owner_timeout';
  if (code === 'TransportUnavailable') return 'transport_unavailable';
  return 'unreadable_reply';
}

/**
 * How often an owner with calls still waiting is probed. Well under a second, so that a caller learns
 * within one that the owner's queue went (issue 26); only calls slower than this cost a probe at all.
 */
const PROBE_EVERY_MS = 250;

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
 *
 * The return alone does not cover an owner that dies with requests on their way (issue 26): one
 * the broker routed in the moment between the owner's death and its exclusive queue's deletion, or
 * one the owner had taken (a turn read with `?wait` it held), is confirmed, never returned, and lost
 * with the queue — its caller would wait out the whole route timeout. So while calls to an owner
 * wait, a mandatory probe goes to its queue every `PROBE_EVERY_MS`; the first one the broker
 * returns (the queue is gone: the owner's connection with it) fails every call still waiting on
 * that owner with `OwnerUnavailable`, as a returned request does.
 */
export class RpcClient {
  /** Issue 27: calls so far by how they ended (`turnchart_routed_commands_total`). */
  readonly results: Record<RouteResult, number> = { answered: 0, owner_unavailable: 0, owner_timeout: 0, transport_unavailable: 0, unreadable_reply: 0 };
  private replyQueue: string | null = null;
  private readonly pending = new Map<string, Pending>();
  /** By owner id: only owners with calls waiting. */
  private readonly watches = new Map<string, Watch>();
  private closed = false;

  private constructor(private readonly link: AmqpLink) {}

  static async start(link: AmqpLink): Promise<RpcClient> {
    const client = new RpcClient(link);
    await link.onChannel((channel) => client.setup(channel));
    return client;
  }

  async call(ownerId: string, request: CommandRequest, options: CallOptions): Promise<CommandReply> {
    const replyTo = this.replyQueue;
    if (this.closed || replyTo === null) {
      this.results.transport_unavailable += 1;
      throw new ApiError('TransportUnavailable', 'this host has no connection to the cluster broker right now');
    }
    const correlationId = randomUUID();
    // The lease's end, not its remainder now: a call failed by a probe later tells what is left then.
    const leaseEndsAt = Date.now() + Math.max(0, options.retryAfterMs);
    const unavailable = () =>
      new ApiError('OwnerUnavailable', `the host that holds session '${'sessionId' in request ? request.sessionId : '?'}' cannot be reached`, {
        retryAfterMs: Math.max(0, Math.round(leaseEndsAt - Date.now())),
      });
    const reply = new Promise<CommandReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.settle(correlationId);
        reject(new ApiError('OwnerTimeout', `the host that holds the session did not answer within ${options.timeoutMs} ms; the command may have taken effect`));
      }, options.timeoutMs);
      this.pending.set(correlationId, { ownerId, resolve, reject, timer, unavailable });
      this.watch(ownerId, correlationId);
    });
    // The broker may return the request (no queue for the owner) before it confirms the publish: the
    // reply then fails while this call still awaits the confirm. Observed here, that is no unhandled
    // rejection (which ends the process); the caller still gets it from `return reply`.
    void reply.then(
      () => (this.results.answered += 1),
      (error: unknown) => (this.results[routeResultOf(error)] += 1),
    );
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

  private watch(ownerId: string, correlationId: string): void {
    const watch = this.watches.get(ownerId);
    if (watch) {
      watch.calls.add(correlationId);
      return;
    }
    const timer = setInterval(() => this.probe(ownerId), PROBE_EVERY_MS);
    timer.unref();
    this.watches.set(ownerId, { calls: new Set([correlationId]), timer, probing: false });
  }

  private probe(ownerId: string): void {
    const watch = this.watches.get(ownerId);
    if (!watch || watch.probing) return;
    watch.probing = true;
    // Expires at once: it is there to be routed or returned, never to wait in a stalled owner's queue.
    this.link
      .publish('', commandQueueOf(ownerId), {}, { mandatory: true, persistent: false, expiration: '0', type: PROBE_MESSAGE })
      // A probe the broker did not take tells nothing; the calls' own timeouts still stand.
      .catch(() => undefined)
      .finally(() => (watch.probing = false));
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

  /**
   * The broker found no queue for the owner (a request or a probe came back): nothing waiting on it
   * will be answered — what was sent before went with the queue, or with the owner — so every call
   * to that owner fails now rather than at its timeout.
   */
  private returned(message: Message): void {
    const ownerId = ownerOfCommandQueue(message.fields.routingKey);
    const ids = ownerId === null ? [String(message.properties.correlationId ?? '')] : [...(this.watches.get(ownerId)?.calls ?? [])];
    for (const id of ids) {
      const pending = this.settle(id);
      pending?.reject(pending.unavailable());
    }
  }

  private settle(correlationId: string): Pending | undefined {
    const pending = this.pending.get(correlationId);
    if (!pending) return undefined;
    this.pending.delete(correlationId);
    clearTimeout(pending.timer);
    const watch = this.watches.get(pending.ownerId);
    if (watch?.calls.delete(correlationId) && watch.calls.size === 0) {
      clearInterval(watch.timer);
      this.watches.delete(pending.ownerId);
    }
    return pending;
  }
}
