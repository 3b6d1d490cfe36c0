import type { Subscription } from 'rxjs';
import type { SessionRow, SessionStorage } from '../../storage/session-storage.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SessionListEntry } from './stream-protocol.js';
import { isAdmin, mayAccess, type Caller } from '../protocol/principal.js';

export interface ListListener {
  /** Issue 25: whose sessions the page may see; an admin sees every principal's. */
  caller: Caller;
  entry(entry: SessionListEntry): void;
}

/** Updates that change what the list shows for a session. */
const STATUS_UPDATES = new Set<UpdateEnvelope['update']['type']>(['turn_started', 'phase_changed', 'turn_finished', 'permission_requested', 'permission_resolved']);

const LIST_LIMIT = 200;

/**
 * The inspector's session list: the newest sessions in storage with what this host knows of each
 * live (the running turn's phase, the last outcome), and a change for a session whenever one of
 * its updates changes that. Sessions that appear without an update (created, or opened by another
 * host) are found by reading the list again every `pollMs` while a page listens.
 */
export class SessionListFeed {
  private readonly listeners = new Set<ListListener>();
  private readonly rows = new Map<string, SessionRow>();
  private readonly lastSent = new Map<string, string>();
  private readonly dirty = new Set<string>();
  private subscriptions: Subscription[] = [];
  private poll: ReturnType<typeof setInterval> | null = null;
  private flushScheduled = false;

  constructor(
    private readonly runtime: Runtime,
    private readonly storage: SessionStorage,
    private readonly pollMs = 2_000,
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** Adds a page and answers the list as it stands. */
  async listen(listener: ListListener): Promise<SessionListEntry[]> {
    if (this.listeners.size === 0) this.start();
    this.listeners.add(listener);
    try {
      await this.refresh(false);
    } catch (error) {
      this.unlisten(listener);
      throw error;
    }
    return [...this.rows.values()]
      .filter((row) => mayAccess(listener.caller, row.principal))
      .sort((a, b) => b.createdAtMs - a.createdAtMs)
      .slice(0, LIST_LIMIT)
      .map((row) => this.entryOf(row));
  }

  unlisten(listener: ListListener): void {
    if (!this.listeners.delete(listener) || this.listeners.size > 0) return;
    for (const s of this.subscriptions) s.unsubscribe();
    this.subscriptions = [];
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
  }

  private start(): void {
    this.subscriptions = [
      this.runtime.updates$.subscribe((envelope) => {
        if (STATUS_UPDATES.has(envelope.update.type)) this.mark(envelope.sessionId);
      }),
      this.runtime.sessionClosed$.subscribe((id) => this.mark(id)),
    ];
    this.poll = setInterval(() => void this.refresh(true).catch((error: unknown) => this.warn(`inspector: could not list sessions: ${String(error)}`)), this.pollMs);
    this.poll.unref();
  }

  /**
   * Reads the newest sessions, and each listening principal's own newest (others' could push them
   * out of the first read); with `announce`, sends the ones the pages do not have yet.
   */
  private async refresh(announce: boolean): Promise<void> {
    const principals = new Set([...this.listeners].filter((l) => !isAdmin(l.caller)).map((l) => l.caller.principal));
    const pages = await Promise.all([
      this.storage.listSessions({ limit: LIST_LIMIT }),
      ...[...principals].map((principal) => this.storage.listSessions({ limit: LIST_LIMIT, principal })),
    ]);
    for (const row of pages.flat()) {
      const known = this.rows.has(row.id);
      this.rows.set(row.id, row);
      if (!known && announce) this.mark(row.id);
    }
  }

  private mark(sessionId: string): void {
    this.dirty.add(sessionId);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // Coalesced: a burst of updates of one session is one change on the page.
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.flushScheduled = false;
    const ids = [...this.dirty];
    this.dirty.clear();
    for (const id of ids) {
      let row = this.rows.get(id);
      if (!row) {
        row = await this.storage.getSession(id).catch(() => undefined);
        if (!row) continue;
        this.rows.set(id, row);
      }
      const entry = this.entryOf(row);
      const json = JSON.stringify(entry);
      if (this.lastSent.get(id) === json) continue;
      this.lastSent.set(id, json);
      for (const listener of this.listeners) if (mayAccess(listener.caller, row.principal)) listener.entry(entry);
    }
  }

  private entryOf(row: SessionRow): SessionListEntry {
    const view = this.runtime.openHandle(row.id)?.snapshot().runtime;
    return {
      sessionId: row.id,
      agent: row.agent,
      principal: row.principal ?? null,
      permissionMode: row.permissionMode,
      createdAtMs: row.createdAtMs,
      status: view?.kind === 'running' ? view.phase : 'idle',
      lastOutcome: view?.kind === 'terminal' ? view.outcome.status : null,
      open: view !== undefined,
    };
  }
}
