import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { ApiError } from '../host/errors.js';
import type { FeedStart, UpdateFeed } from '../host/session-access.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { AmqpLink } from '../transport/amqp-link.js';
import { FollowedFeed } from './followed-feed.js';
import { closedSchema, envelopeSchema, parseBody } from './messages.js';
import { CLOSED_MESSAGE, sessionKeyOf, UPDATES_EXCHANGE } from './names.js';
import type { RpcClient } from './rpc-client.js';

/**
 * The event streams this host serves for sessions other hosts own. Its one exclusive queue is bound
 * to a session's routing key while at least one stream follows that session, and unbound after the
 * last leaves. A stream ends — and its client resumes with its last id, on whichever host — when
 * the owner closes the session (it publishes `closed`), when the owner no longer holds it or has
 * gone (checked every `checkMs`), or when this host's broker connection was replaced (what was
 * published meanwhile never reached the queue).
 */
export class UpdateFollower {
  private queue: string | null = null;
  private readonly feeds = new Map<string, Set<FollowedFeed>>();
  /** Bind and unbind of one session, in the order they were asked for. */
  private readonly bindings = new Map<string, Promise<void>>();
  private channel: ConfirmChannel | null = null;
  /** Raised with every new channel: a binding change asked for on an older one is not run on this one. */
  private generation = 0;
  private readonly timer: NodeJS.Timeout;
  private checking = false;

  private constructor(
    private readonly rpc: RpcClient,
    private readonly checkMs: number,
  ) {
    this.timer = setInterval(() => void this.checkOwners(), checkMs);
    this.timer.unref();
  }

  static async start(link: AmqpLink, rpc: RpcClient, checkMs: number): Promise<UpdateFollower> {
    const follower = new UpdateFollower(rpc, checkMs);
    await link.onChannel((channel) => follower.setup(channel));
    return follower;
  }

  /**
   * A feed of the session: bound first, then the owner is asked where the stream starts, so no
   * update falls between the two (those that come twice are dropped by sequence).
   */
  async follow(sessionId: string, ownerId: string, startOf: () => Promise<FeedStart>): Promise<UpdateFeed> {
    const feed = new FollowedFeed(sessionId, ownerId, (ended) => this.forget(ended));
    const set = this.feeds.get(sessionId) ?? new Set<FollowedFeed>();
    this.feeds.set(sessionId, set);
    set.add(feed);
    try {
      if (set.size === 1) this.enqueue(sessionId, (channel, queue) => channel.bindQueue(queue, UPDATES_EXCHANGE, sessionKeyOf(sessionId)));
      await this.bindings.get(sessionId);
      feed.begin(await startOf());
      return feed;
    } catch (error) {
      feed.end();
      throw error;
    }
  }

  /** Ends every stream: the host is leaving the cluster. */
  close(): void {
    clearInterval(this.timer);
    this.endAll();
  }

  private async setup(channel: ConfirmChannel): Promise<void> {
    // A replaced connection lost whatever was published while it was down: every stream ends and resumes.
    this.generation += 1;
    this.channel = null;
    this.queue = null;
    this.endAll();
    this.bindings.clear();
    await channel.assertExchange(UPDATES_EXCHANGE, 'topic', { durable: true });
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
    await channel.consume(queue, (message) => message && this.dispatch(message), { noAck: true });
    this.channel = channel;
    this.queue = queue;
  }

  private dispatch(message: ConsumeMessage): void {
    const body = parseBody(message.content);
    if (message.properties.type === CLOSED_MESSAGE) {
      const closed = closedSchema.safeParse(body);
      if (closed.success) for (const feed of [...(this.feeds.get(closed.data.sessionId) ?? [])]) feed.end();
      return;
    }
    const envelope = envelopeSchema.safeParse(body);
    if (!envelope.success) return;
    for (const feed of [...(this.feeds.get(envelope.data.sessionId) ?? [])]) feed.update(envelope.data as unknown as UpdateEnvelope);
  }

  private forget(feed: FollowedFeed): void {
    const set = this.feeds.get(feed.sessionId);
    if (!set?.delete(feed) || set.size > 0) return;
    this.feeds.delete(feed.sessionId);
    this.enqueue(feed.sessionId, (channel, queue) => channel.unbindQueue(queue, UPDATES_EXCHANGE, sessionKeyOf(feed.sessionId)));
    // An unbind that fails (the channel went away) leaves nothing to undo: the queue goes with the channel.
    void this.bindings.get(feed.sessionId)?.catch(() => undefined);
  }

  /** Runs a binding change after the ones already asked for on this session. */
  private enqueue(sessionId: string, change: (channel: ConfirmChannel, queue: string) => Promise<unknown>): void {
    const previous = this.bindings.get(sessionId) ?? Promise.resolve();
    const generation = this.generation;
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const { channel, queue } = this;
        if (!channel || !queue || generation !== this.generation) throw new ApiError('TransportUnavailable', 'this host has no connection to the cluster broker right now');
        await change(channel, queue);
      });
    this.bindings.set(sessionId, next);
  }

  /** Streams whose owner no longer holds their session, or has gone, end. */
  private async checkOwners(): Promise<void> {
    if (this.checking || this.feeds.size === 0) return;
    this.checking = true;
    try {
      const byOwner = new Map<string, FollowedFeed[]>();
      for (const set of this.feeds.values()) for (const feed of set) byOwner.set(feed.ownerId, [...(byOwner.get(feed.ownerId) ?? []), feed]);
      await Promise.all([...byOwner].map(([ownerId, feeds]) => this.checkOwner(ownerId, feeds)));
    } finally {
      this.checking = false;
    }
  }

  private async checkOwner(ownerId: string, feeds: FollowedFeed[]): Promise<void> {
    const sessionIds = [...new Set(feeds.map((feed) => feed.sessionId))];
    try {
      const reply = await this.rpc.call(ownerId, { op: 'holds', sessionIds }, { timeoutMs: Math.max(this.checkMs, 1_000), retryAfterMs: 0 });
      if (!reply.ok) return;
      const open = new Set((reply.value as { open?: unknown }).open as string[]);
      for (const feed of feeds) if (!open.has(feed.sessionId)) feed.end();
    } catch (error) {
      // A slow owner is still the owner; one with no queue has gone.
      if (error instanceof ApiError && error.code === 'OwnerUnavailable') for (const feed of feeds) feed.end();
    }
  }

  private endAll(): void {
    for (const set of [...this.feeds.values()]) for (const feed of [...set]) feed.end();
  }
}
