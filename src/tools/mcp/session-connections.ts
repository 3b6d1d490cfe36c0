import { messageOf } from '../../protocol/error-message.js';
import type { ToolExecutionResult } from '../define-tool.js';
import type { McpServerConfig } from './server-config.js';
import { ServerConnection, type CallOptions, type ConnectionOptions } from './server-connection.js';

/**
 * A `scope: "session"` server's connections, one per session: each started (stdio: its own process,
 * in its own process group and ledger entry; HTTP: its own client and MCP session) on the session's
 * first call, with the config, environment and restart backoff of a host-scoped server, and
 * `${workspace}` the session's own directory. Two sessions never share one. A session's connection
 * is closed once unused for `sessionIdleMs`, by `closeSession`, or — past `maxSessionConnections`
 * live ones — when it is the least recently used of those with no call under way. A call under
 * way is never cut off for another session's: when every connection has one, the new session's
 * call fails instead (on a host of many users, one user's sessions cannot end another's calls).
 *
 * The server's catalog connection (its tool list, followed on `list_changed`) is never called;
 * starting a session's connection also restarts the catalog if it went down.
 */

export interface SessionScopeOptions {
  /** A session's connection is closed once no call has used it for this long (ms; default 10 minutes). */
  sessionIdleMs?: number;
  /** Live per-session connections per server (default 64); past it, the least recently used idle one is closed first. */
  maxSessionConnections?: number;
  /** Runs `callback` after `ms`; answers the cancel (default: an unref'd `setTimeout`). Tests pass a clock of their own. */
  schedule?: (callback: () => void, ms: number) => () => void;
}

const DEFAULT_SESSION_IDLE_MS = 10 * 60_000;
const DEFAULT_MAX_SESSION_CONNECTIONS = 64;

function scheduleTimer(callback: () => void, ms: number): () => void {
  const timer = setTimeout(callback, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

interface SessionEntry {
  connection: ServerConnection;
  /** Calls under way: an entry is idle (its timer armed, first to go past the cap) only at 0. */
  calls: number;
  cancelIdle: (() => void) | null;
}

export class SessionConnections {
  /** In order of last use, the least recent first. */
  private readonly entries = new Map<string, SessionEntry>();
  private readonly closing = new Set<Promise<void>>();
  private shut = false;
  private readonly idleMs: number;
  private readonly max: number;
  private readonly schedule: (callback: () => void, ms: number) => () => void;

  constructor(
    private readonly catalog: ServerConnection,
    private readonly connectionOptions: ConnectionOptions,
    options: SessionScopeOptions,
    /** The config of a session's connection, given the session's directory (none: the host's). */
    private readonly configFor: (workspaceDir: string | undefined) => McpServerConfig = () => catalog.config,
  ) {
    this.idleMs = options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS;
    this.max = Math.max(1, options.maxSessionConnections ?? DEFAULT_MAX_SESSION_CONNECTIONS);
    this.schedule = options.schedule ?? scheduleTimer;
  }

  get name(): string {
    return this.catalog.name;
  }

  get config(): McpServerConfig {
    return this.catalog.config;
  }

  /** The sessions with a live (or starting) connection, the least recently used first. */
  sessions(): string[] {
    return [...this.entries.keys()];
  }

  /** The session's own connection while it has one (tests read its `pid` or `httpSessionId`). */
  connection(sessionId: string): ServerConnection | undefined {
    return this.entries.get(sessionId)?.connection;
  }

  /** Calls the tool on the session's own connection, started (in `workspaceDir`, the session's directory) if it has none. */
  async call(tool: string, args: Record<string, unknown>, options: CallOptions, sessionId: string, workspaceDir?: string): Promise<ToolExecutionResult> {
    if (this.shut) return { status: 'failed', content: `MCP server '${this.name}' is closed` };
    let entry: SessionEntry;
    try {
      entry = this.acquire(sessionId, workspaceDir);
    } catch (error) {
      return { status: 'failed', content: `MCP server '${this.name}': ${messageOf(error)}` };
    }
    entry.calls += 1;
    try {
      return await entry.connection.call(tool, args, options);
    } finally {
      entry.calls -= 1;
      if (entry.calls === 0 && this.entries.get(sessionId) === entry) this.armIdle(sessionId, entry);
    }
  }

  /** Closes the session's connection (its process gone once this resolves); a later call starts another. */
  async closeSession(sessionId: string): Promise<void> {
    const entry = this.entries.get(sessionId);
    if (entry) await this.drop(sessionId, entry);
  }

  /** Closes every session's connection; later calls fail. */
  async close(): Promise<void> {
    this.shut = true;
    for (const [sessionId, entry] of [...this.entries]) void this.drop(sessionId, entry);
    await this.settled();
  }

  /** Resolves once the closes under way (idle, past the cap, `closeSession`) are done: their processes gone. */
  async settled(): Promise<void> {
    await Promise.all([...this.closing]);
  }

  private acquire(sessionId: string, workspaceDir: string | undefined): SessionEntry {
    let entry = this.entries.get(sessionId);
    if (entry) {
      // Moved to the end: the most recently used.
      this.entries.delete(sessionId);
      entry.cancelIdle?.();
      entry.cancelIdle = null;
    } else {
      // A session keeps its directory for its life: its connection, once started, stays there.
      const config = this.configFor(workspaceDir);
      while (this.entries.size >= this.max) {
        if (!this.evictIdle()) throw new Error(`all ${this.max} of its session connections have a call under way; try again when one ends`);
      }
      entry = { connection: new ServerConnection(this.name, config, this.connectionOptions), calls: 0, cancelIdle: null };
      // The catalog is never called, so nothing else would start it again after it went down.
      this.catalog.start().catch(() => undefined);
    }
    this.entries.set(sessionId, entry);
    return entry;
  }

  /** Closes the least recently used connection with no call under way; false when every one has a call. */
  private evictIdle(): boolean {
    for (const [sessionId, entry] of this.entries) {
      if (entry.calls > 0) continue;
      void this.drop(sessionId, entry);
      return true;
    }
    return false;
  }

  private armIdle(sessionId: string, entry: SessionEntry): void {
    entry.cancelIdle?.();
    entry.cancelIdle = this.schedule(() => {
      entry.cancelIdle = null;
      if (entry.calls === 0 && this.entries.get(sessionId) === entry) void this.drop(sessionId, entry);
    }, this.idleMs);
  }

  private drop(sessionId: string, entry: SessionEntry): Promise<void> {
    if (this.entries.get(sessionId) === entry) this.entries.delete(sessionId);
    entry.cancelIdle?.();
    entry.cancelIdle = null;
    const closed = entry.connection.close();
    this.closing.add(closed);
    void closed.finally(() => this.closing.delete(closed));
    return closed;
  }
}
