import { randomUUID } from 'node:crypto';
import type { SessionStorage } from '../../storage/session-storage.js';
import { messageOf } from '../protocol/error-message.js';
import { isAdmin, type Caller } from '../protocol/principal.js';
import { ApiError, viaStorage } from './errors.js';

/** What each principal may hold or do (issue 25); an admin is held only to the host's own limits. */
export interface PrincipalQuotaSettings {
  /** Sessions open at once, on any host (`--max-sessions-per-principal`). */
  sessions: number;
  /** Turns running or queued at once (`--max-running-turns-per-principal`). */
  runningTurns: number;
  /** Turns started in any 60 s (`--turns-per-minute-per-principal`). */
  turnsPerMinute: number;
  /** Streams open at once, on any host (`--max-streams-per-principal`). */
  streams: number;
}

/** Generous: far above what one person at a keyboard does, far below what lets one user take a shared host. */
export const DEFAULT_PRINCIPAL_QUOTAS: PrincipalQuotaSettings = { sessions: 100, runningTurns: 10, turnsPerMinute: 60, streams: 20 };

/** The window of `turnsPerMinute`. */
const TURN_WINDOW_MS = 60_000;

/** How long a client refused a place it holds too many of is asked to wait: places free up as things end. */
const QUOTA_RETRY_AFTER_MS = 5_000;

type QuotaName = 'sessions' | 'running_turns' | 'turns_per_minute' | 'streams';

/** Ends what was admitted (an opening, a submission, a stream): called once, whatever happened. */
type Admission = () => void;

const ADMITTED: Admission = () => undefined;

/**
 * The per-principal quotas (issue 25), checked on the host a request reached. The counts are the
 * database's — live leases, turn rows, stream slots — so they survive a restart and are one count
 * across a cluster on one database; what this host has under way and not yet written (sessions
 * being opened, turns being submitted) is added from memory. A quota is a check, not a reservation
 * held across hosts: requests racing on different hosts may pass it together, by at most their
 * number. Stream slots are rows this host renews every third of `slotTtlMs` and deletes when the
 * stream ends; a crashed host's slots stop counting once they expire.
 */
export class PrincipalQuotas {
  private readonly openings = new Map<string, number>();
  private readonly submissions = new Map<string, number>();
  /** Slots this host holds, and those whose delete failed (tried again at the next renewal). */
  private readonly slots = new Set<string>();
  private readonly unreleased = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly storage: SessionStorage,
    readonly settings: PrincipalQuotaSettings,
    private readonly options: { ownerId: string; slotTtlMs: number; now: () => number; warn: (message: string) => void },
  ) {}

  /**
   * A request about to create a session, or open a stored one (not open anywhere): refused when the
   * principal's sessions held on any host, and those being opened here, reach the quota.
   */
  async admitSession(caller: Caller): Promise<Admission> {
    if (isAdmin(caller)) return ADMITTED;
    const { principal } = caller;
    // Counted before the read: of openings racing here, the later ones count the earlier.
    const { before, done } = this.count(this.openings, principal);
    try {
      const held = await viaStorage(() => this.storage.heldSessionCount(principal));
      if (held + before >= this.settings.sessions) {
        throw quotaExceeded('sessions', this.settings.sessions, QUOTA_RETRY_AFTER_MS, `principal '${principal}' holds its limit of ${this.settings.sessions} open sessions; try again once some have closed`);
      }
      return done;
    } catch (error) {
      done();
      throw error;
    }
  }

  /**
   * A request about to submit a turn: one read (`turnActivity`), none for an admin. A request sent
   * again whose turn exists already is let through (it answers with that turn). Refused when the
   * principal's running and queued turns reach `runningTurns`, or its turns of the last minute reach
   * `turnsPerMinute` (then `Retry-After` is when the oldest of them leaves the window).
   */
  async admitTurn(caller: Caller, sessionId: string, clientRequestId: string): Promise<Admission> {
    if (isAdmin(caller)) return ADMITTED;
    const { principal } = caller;
    const { before: racing, done } = this.count(this.submissions, principal);
    try {
      const now = this.options.now();
      // The window is the last 60 s, `now` included: a turn leaves it exactly 60 s after it started.
      const activity = await viaStorage(() => this.storage.turnActivity(principal, now - TURN_WINDOW_MS + 1, { sessionId, clientRequestId }));
      if (activity.known) return done;
      const { runningTurns, turnsPerMinute } = this.settings;
      if (activity.active + racing >= runningTurns) {
        throw quotaExceeded('running_turns', runningTurns, QUOTA_RETRY_AFTER_MS, `principal '${principal}' has its limit of ${runningTurns} turns running or queued; try again once one has ended`);
      }
      if (activity.recent + racing >= turnsPerMinute) {
        const leavesAtMs = (activity.oldestRecentMs ?? now) + TURN_WINDOW_MS;
        throw quotaExceeded('turns_per_minute', turnsPerMinute, Math.max(1_000, leavesAtMs - now), `principal '${principal}' started its limit of ${turnsPerMinute} turns in the last minute; try again later`);
      }
      return done;
    } catch (error) {
      done();
      throw error;
    }
  }

  /** A stream about to open: a slot of the principal's in the database until it ends; refused when it holds `streams` already. */
  async claimStream(caller: Caller): Promise<Admission> {
    if (isAdmin(caller)) return ADMITTED;
    const id = `slot_${randomUUID()}`;
    const { principal } = caller;
    const claimed = await viaStorage(() => this.storage.claimStreamSlot({ id, principal, ownerId: this.options.ownerId, ttlMs: this.options.slotTtlMs }, this.settings.streams));
    if (!claimed) {
      throw quotaExceeded('streams', this.settings.streams, QUOTA_RETRY_AFTER_MS, `principal '${principal}' has its limit of ${this.settings.streams} streams open; try again once one has ended`);
    }
    this.slots.add(id);
    this.renewing();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.slots.delete(id);
      if (this.closed) return;
      this.storage.releaseStreamSlot(id).catch(() => this.unreleased.add(id));
    };
  }

  /** Gives up every slot this host holds (before its storage closes); streams that end later release nothing more. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.slots.size === 0 && this.unreleased.size === 0) return;
    this.slots.clear();
    this.unreleased.clear();
    await this.storage.releaseStreamSlots(this.options.ownerId).catch((error: unknown) => {
      this.options.warn(`could not release this host's stream slots (they expire on their own): ${messageOf(error)}`);
    });
  }

  /** Renews this host's slots every third of their lifetime while it holds any. */
  private renewing(): void {
    if (this.timer || this.closed) return;
    const every = Math.max(100, Math.floor(this.options.slotTtlMs / 3));
    this.timer = setInterval(() => void this.renew(), every);
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    for (const id of [...this.unreleased]) {
      await this.storage.releaseStreamSlot(id).then(() => this.unreleased.delete(id), () => undefined);
    }
    if (this.slots.size === 0 && this.unreleased.size === 0) {
      if (this.timer) clearInterval(this.timer);
      this.timer = null;
      return;
    }
    await this.storage.renewStreamSlots(this.options.ownerId, this.options.slotTtlMs).catch((error: unknown) => {
      this.options.warn(`could not renew this host's stream slots: ${messageOf(error)}`);
    });
  }

  /** One more under way for the principal: how many were before it, and the function that counts it off, once. */
  private count(counts: Map<string, number>, principal: string): { before: number; done: Admission } {
    const before = counts.get(principal) ?? 0;
    counts.set(principal, before + 1);
    let ended = false;
    const done = () => {
      if (ended) return;
      ended = true;
      const left = (counts.get(principal) ?? 1) - 1;
      if (left <= 0) counts.delete(principal);
      else counts.set(principal, left);
    };
    return { before, done };
  }
}

/** `429 QuotaExceeded`, with which quota, its limit, and `Retry-After`. */
function quotaExceeded(quota: QuotaName, limit: number, retryAfterMs: number, message: string): ApiError {
  return new ApiError('QuotaExceeded', message, { quota, limit, retryAfterMs });
}
