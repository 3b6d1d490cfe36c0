import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { AcquireResult, LeaseRequest, SessionStorage } from '../../storage/session-storage.js';
import type { OwnerIdentity } from '../protocol/session-owner.js';

export interface OwnershipOptions {
  /** How long a lease lasts without renewal (ms); renewed every third of it. */
  ttlMs: number;
  /** This runtime's owner id; a new one per runtime by default. */
  ownerId?: string;
  /** The host name other runtimes see; `os.hostname()` by default. */
  host?: string;
}

export const DEFAULT_LEASE_TTL_MS = 30_000;

/** Owners alive in this process: a lease held under this process's pid by anyone else is a previous life's. */
const LIVE_IN_THIS_PROCESS = new Set<string>();

/**
 * One owner per session (issue: serving). A runtime holds a lease on every session it has open and
 * renews them together; another runtime cannot open a session whose lease is live. An owner on this
 * same host whose process no longer exists is known to be gone at once, so a host restarted after a
 * crash takes its sessions back without waiting for their leases to run out.
 */
export class Ownership {
  readonly identity: OwnerIdentity;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly storage: SessionStorage,
    private readonly options: OwnershipOptions,
  ) {
    this.identity = { ownerId: options.ownerId ?? `owner_${randomUUID()}`, host: options.host ?? hostname(), pid: process.pid };
    LIVE_IN_THIS_PROCESS.add(this.identity.ownerId);
  }

  get lease(): LeaseRequest {
    return { ...this.identity, ttlMs: this.options.ttlMs };
  }

  /** Takes the session unless a live owner holds it; an owner found dead on this host is set aside first. */
  async acquire(sessionId: string, reserveSequences: number): Promise<AcquireResult> {
    const first = await this.storage.acquireSession(sessionId, this.lease, reserveSequences);
    if (first.ok || first.reason !== 'owned' || !this.isGone(first.holder)) return first;
    await this.storage.expireOwner(first.holder.ownerId);
    return this.storage.acquireSession(sessionId, this.lease, reserveSequences);
  }

  /** Ends the leases of owners on this host whose processes have exited (before the startup correction). */
  async reapGoneOwners(): Promise<void> {
    for (const owner of await this.storage.liveOwnersOn(this.identity.host)) {
      if (this.isGone(owner)) await this.storage.expireOwner(owner.ownerId);
    }
  }

  /** Renews the leases of `held()` sessions every third of the lease; `lost` hears of any no longer held. */
  startRenewing(held: () => string[], lost: (sessionId: string) => void, failed: (error: unknown) => void): void {
    const renew = async () => {
      const ids = held();
      if (ids.length === 0) return;
      const renewed = new Set(await this.storage.renewLeases(this.lease, ids));
      for (const id of ids) if (!renewed.has(id)) lost(id);
    };
    this.timer = setInterval(() => void renew().catch(failed), Math.max(1, Math.floor(this.options.ttlMs / 3)));
    // Leases are kept while the host lives; they are no reason to keep it alive.
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    LIVE_IN_THIS_PROCESS.delete(this.identity.ownerId);
  }

  /**
   * An owner on this host whose process is gone. Under this very pid (a restarted container often
   * gets the same one) it is gone unless it is a runtime of this process.
   */
  private isGone(owner: OwnerIdentity): boolean {
    if (owner.host !== this.identity.host || owner.pid <= 0) return false;
    if (owner.pid === process.pid) return !LIVE_IN_THIS_PROCESS.has(owner.ownerId);
    try {
      process.kill(owner.pid, 0);
      return false;
    } catch (error) {
      // EPERM: the process exists but belongs to someone else.
      return (error as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }
}
