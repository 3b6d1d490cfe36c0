import type { CreateSessionOptions } from '../protocol/commands.js';
import { isAdmin, type Caller } from '../protocol/principal.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import { ApiError, viaStorage } from './errors.js';
import type { PrincipalQuotas } from './principal-quotas.js';

/** How long a client refused for capacity is asked to wait (`Retry-After`). */
export const CAPACITY_RETRY_AFTER_MS = 5_000;

/** The default of `--max-sessions`: far above what one person's sessions need, far below what exhausts the host. */
export const DEFAULT_MAX_SESSIONS = 1_000;

/**
 * The host's cap on open sessions (issue 22, finding 8: every open session holds its actors and
 * conversation in memory until `--idle-ttl` closes it). Every way a request opens a session goes
 * through here — creating one, and opening a closed one from storage — and past the cap it is
 * refused with `503 HostAtCapacity` and `Retry-After`. A session already open here is never
 * refused. What the runtime opens by itself (sub-agents, queued turns after a restart, sessions
 * whose owner died) is not refused, since that work is already accepted, but it counts.
 *
 * Issue 25: past the host's cap, the caller's own quota of open sessions (`PrincipalQuotas`): a
 * request that creates one, or opens a stored one of theirs, is refused `429 QuotaExceeded` once
 * the principal holds its quota on any host. Admins are held only to the host's cap.
 */
export class SessionLimit {
  /** Openings under way, by session id, and creations: counted before they land in the runtime. */
  private readonly opening = new Set<string>();
  private creating = 0;

  constructor(
    private readonly runtime: Runtime,
    readonly max: number,
    private readonly quotas: PrincipalQuotas,
  ) {}

  /** A new session held by this host, the caller's: an admin's draws on no principal's daily token budget. */
  async create(caller: Caller, options: Omit<CreateSessionOptions, 'principal' | 'quotaExempt'>): Promise<SessionHandle> {
    this.admit();
    this.creating += 1;
    try {
      const admitted = await this.quotas.admitSession(caller);
      try {
        return await viaStorage(() => this.runtime.createSession({ ...options, principal: caller.principal, ...(isAdmin(caller) && { quotaExempt: true }) }));
      } finally {
        admitted();
      }
    } finally {
      this.creating -= 1;
    }
  }

  /**
   * The session, opened from storage unless it is open here already (or being opened). `caller`:
   * the request's, whose quota of open sessions an opening counts against; absent for a command
   * another host routed here (that host checked its caller).
   */
  async open(sessionId: string, caller?: Caller): Promise<SessionHandle> {
    const open = this.runtime.openHandle(sessionId);
    if (open?.isOpen || this.opening.has(sessionId)) return viaStorage(() => this.runtime.openSession(sessionId));
    this.admit();
    this.opening.add(sessionId);
    try {
      const admitted = caller ? await this.quotas.admitSession(caller) : () => undefined;
      try {
        return await viaStorage(() => this.runtime.openSession(sessionId));
      } finally {
        admitted();
      }
    } finally {
      this.opening.delete(sessionId);
    }
  }

  private admit(): void {
    if (this.runtime.openSessionCount + this.opening.size + this.creating < this.max) return;
    throw new ApiError('HostAtCapacity', `this host holds its limit of ${this.max} open sessions; try again once some have closed`, {
      retryAfterMs: CAPACITY_RETRY_AFTER_MS,
    });
  }
}
