import type { ContextWindowPreview } from '../context/preview.js';
import { ApiError } from '../host/errors.js';
import type { FeedStart, SessionAccess, UpdateFeed } from '../host/session-access.js';
import type { CommandRequest } from './messages.js';
import { SESSION_MOVED } from './owner-commands.js';
import type { RpcClient } from './rpc-client.js';
import type { UpdateFollower } from './update-follower.js';
import { commandResultOf, type CommandInput, type CommandResult, type RoutedCommandName } from '../protocol/command-catalog.js';
import type { TurnStatusResult } from '../protocol/command-results.js';
import type { SessionSnapshot } from '../protocol/session-snapshot.js';
import type { LeaseHolder } from '../protocol/session-owner.js';
import type { Caller } from '../protocol/principal.js';

export interface RemoteRouting {
  rpc: RpcClient;
  follower: UpdateFollower;
  /** How long a routed command may take, on top of the time it asks the owner to wait. */
  timeoutMs: number;
}

type Routed = CommandRequest extends infer R ? (R extends { sessionId: string } ? Omit<R, 'sessionId' | 'caller'> : never) : never;

/**
 * A session another live host holds, with the same command surface as a local one: each command
 * goes to the holder and comes back as the same value or the same typed error, so the route answers
 * with the same status and body it would have answered there.
 */
export class RemoteSession implements SessionAccess {
  constructor(
    readonly id: string,
    private readonly holder: LeaseHolder,
    private readonly routing: RemoteRouting,
    /** Issue 25: every routed command carries who asked, and the owner checks it again. */
    private readonly caller: Caller,
  ) {}

  /**
   * Runs a command on the holder. Its answer is checked against the command's catalog entry: a
   * success without the command's fields, or a refusal with a code the command does not list,
   * is refused here as `InternalError` rather than passed on as if it were the command's answer.
   */
  async call<K extends RoutedCommandName>(name: K, input: CommandInput<K>): Promise<CommandResult<K>> {
    const value = await this.route({ op: 'command', name, input });
    const result = commandResultOf(name, value);
    if (result) return result;
    throw new ApiError('InternalError', `the host that holds session '${this.id}' answered ${name} with what that command never answers`);
  }

  snapshot(): Promise<SessionSnapshot> {
    return this.query({ op: 'snapshot' });
  }

  turnState(turnId: string, waitMs: number): Promise<TurnStatusResult> {
    return this.query({ op: 'turnState', turnId, waitMs }, waitMs);
  }

  contextWindow(): Promise<ContextWindowPreview> {
    return this.query({ op: 'context' });
  }

  updateFeed(after: number | null): Promise<UpdateFeed> {
    return this.routing.follower.follow(this.id, this.holder.ownerId, () => this.query<FeedStart>({ op: 'feed', after }));
  }

  /**
   * A query's answer is taken as what the holder — this same code — sends for it: unlike a
   * command's, it is not checked (a snapshot, a context window, a feed's start are large and
   * only shown, never acted on here).
   */
  private async query<T>(request: Exclude<Routed, { op: 'command' }>, waitMs = 0): Promise<T> {
    return (await this.route(request, waitMs)) as T;
  }

  private async route(request: Routed, waitMs = 0): Promise<unknown> {
    const reply = await this.routing.rpc.call(this.holder.ownerId, { ...request, sessionId: this.id, caller: this.caller }, {
      timeoutMs: this.routing.timeoutMs + waitMs,
      retryAfterMs: this.holder.remainingMs,
    });
    if (reply.ok) return reply.value;
    const { code, message, ...details } = reply.error;
    if (code === SESSION_MOVED) {
      throw new ApiError('SessionOwnedElsewhere', `session '${this.id}' changed hands while the command was on its way; send it again`);
    }
    throw new ApiError(code, message, details);
  }
}
