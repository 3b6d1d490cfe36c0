import type { ContextWindowPreview } from '../context/preview.js';
import { ApiError } from '../host/errors.js';
import type { FeedStart, SessionAccess, UpdateFeed } from '../host/session-access.js';
import type { CommandRequest } from './messages.js';
import { SESSION_MOVED } from './owner-commands.js';
import type { RpcClient } from './rpc-client.js';
import type { UpdateFollower } from './update-follower.js';
import type {
  CancelTurnResult,
  CompactResult,
  DeliverResult,
  ResolvePermissionResult,
  RewindResult,
  SetModeResult,
  SwitchAgentResult,
  SubmitTurnResult,
  TurnStatusResult,
} from '../protocol/command-results.js';
import type { SessionSnapshot } from '../protocol/session-snapshot.js';
import type { LeaseHolder } from '../protocol/session-owner.js';

export interface RemoteRouting {
  rpc: RpcClient;
  follower: UpdateFollower;
  /** How long a routed command may take, on top of the time it asks the owner to wait. */
  timeoutMs: number;
}

type Routed = CommandRequest extends infer R ? (R extends { sessionId: string } ? Omit<R, 'sessionId'> : never) : never;

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
  ) {}

  snapshot(): Promise<SessionSnapshot> {
    return this.call({ op: 'snapshot' });
  }

  submitTurn(command: unknown): Promise<SubmitTurnResult> {
    return this.call({ op: 'submitTurn', command });
  }

  turnState(turnId: string, waitMs: number): Promise<TurnStatusResult> {
    return this.call({ op: 'turnState', turnId, waitMs }, waitMs);
  }

  cancelTurn(turnId: string): Promise<CancelTurnResult> {
    return this.call({ op: 'cancelTurn', turnId });
  }

  resolvePermission(command: unknown): Promise<ResolvePermissionResult> {
    return this.call({ op: 'resolvePermission', command });
  }

  setPermissionMode(mode: unknown): Promise<SetModeResult> {
    return this.call({ op: 'setPermissionMode', mode });
  }

  switchAgent(agent: unknown): Promise<SwitchAgentResult> {
    return this.call({ op: 'switchAgent', agent });
  }

  deliverAgentMessage(message: unknown): Promise<DeliverResult> {
    return this.call({ op: 'deliverAgentMessage', message });
  }

  compactConversation(): Promise<CompactResult> {
    return this.call({ op: 'compact' });
  }

  rewindConversation(compactionId: unknown): Promise<RewindResult> {
    return this.call({ op: 'rewind', compactionId });
  }

  contextWindow(): Promise<ContextWindowPreview> {
    return this.call({ op: 'context' });
  }

  updateFeed(after: number | null): Promise<UpdateFeed> {
    return this.routing.follower.follow(this.id, this.holder.ownerId, () => this.call<FeedStart>({ op: 'feed', after }));
  }

  private async call<T>(request: Routed, waitMs = 0): Promise<T> {
    const reply = await this.routing.rpc.call(this.holder.ownerId, { ...request, sessionId: this.id } as CommandRequest, {
      timeoutMs: this.routing.timeoutMs + waitMs,
      retryAfterMs: this.holder.remainingMs,
    });
    if (reply.ok) return reply.value as T;
    const { code, message, ...details } = reply.error;
    if (code === SESSION_MOVED) {
      throw new ApiError('SessionOwnedElsewhere', `session '${this.id}' changed hands while the command was on its way; send it again`);
    }
    throw new ApiError(code, message, details);
  }
}
