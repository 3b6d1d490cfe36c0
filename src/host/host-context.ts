import type { SessionStorage } from '../../storage/session-storage.js';
import type { InspectHub } from '../inspect/inspect-hub.js';
import type { SessionListFeed } from '../inspect/session-list.js';
import { sessionIdSchema, type PermissionMode } from '../protocol/commands.js';
import { SessionOwnedElsewhereError } from '../protocol/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import { ApiError, defaultMessage, viaStorage } from './errors.js';
import { LocalSession } from './local-session.js';
import type { SessionAccess } from './session-access.js';
import type { SessionLimit } from './session-limit.js';
import type { SseOptions } from './sse-stream.js';
import type { StreamLimit } from './stream-limit.js';
import type { TaskClient } from '../tasks/task-client.js';
import type { LeaseHolder } from '../protocol/session-owner.js';
import type { AgentDirectory } from './agent-directory.js';

/** How a host in a cluster reaches a session another host holds. */
interface SessionRouter {
  /** A proxy with the same command surface that routes every command to the session's holder. */
  remote(sessionId: string, holder: LeaseHolder): SessionAccess;
}

/** This host's membership of a cluster: the router the routes use, and how to leave. */
export interface ClusterMembership {
  router: SessionRouter;
  /** Stops the lease sweep: called before the runtime shuts down, so the sweep opens nothing more. */
  quiesce(): void;
  /** Ends remote streams, waits for unconfirmed updates (the sessions' `closed` among them), closes the connection. */
  close(): Promise<void>;
}

/** A cluster for the host to join once its runtime runs (`clusterOf` in `src/cluster`, which builds on this seam). */
export interface HostCluster {
  /** What run_command's commands must never see (the broker URL, with its password). */
  secrets: readonly string[];
  join(host: HostContext, leaseTtlMs: number): Promise<ClusterMembership>;
}

/** What every route reaches: the runtime, its storage, and the host's settings. */
export interface HostContext {
  runtime: Runtime;
  storage: SessionStorage;
  /** Every session the service creates works in this directory. */
  workspaceDir: string;
  /** The mode of sessions created without one. */
  defaultPermissionMode: PermissionMode;
  /** The agents a request may pick, described (`GET /agents`). */
  agents: AgentDirectory;
  sse: SseOptions;
  warn: (message: string) => void;
  /** Submitting and controlling tasks: null when the host runs without RabbitMQ. */
  tasks: TaskClient | null;
  /** Whether the last storage check failed (read by `/healthz`). */
  storageDown: boolean;
  /** The inspector page: its watches, its session list, and where its built assets are. */
  inspector: { hub: InspectHub; list: SessionListFeed; assets: string };
  /** Set when the host is one of a cluster: sessions held elsewhere are routed rather than refused. */
  router?: SessionRouter | null;
  /** The host's capacity: every session a request opens, and every stream, is taken through these. */
  limits: { sessions: SessionLimit; streams: StreamLimit };
}

/**
 * The session a request is about. Open here, or free to take (nobody holds it, or its lease ran
 * out): a local session, opened again from storage when it was closed for being idle. Held by
 * another live host: `SessionOwnedElsewhere`, or in a cluster a proxy to that host.
 */
export async function sessionOf(host: HostContext, sessionId: string): Promise<SessionAccess> {
  const remote = await heldElsewhere(host, sessionId);
  if (remote) return remote;
  try {
    return new LocalSession(await localHandle(host, sessionId), host.runtime);
  } catch (error) {
    if (!(error instanceof SessionOwnedElsewhereError) || !host.router) throw error;
    return host.router.remote(sessionId, error.holder);
  }
}

/**
 * The session if it is open somewhere — here, or (in a cluster) held by another live host — and
 * null otherwise; nothing is opened to find that out. What is not open anywhere runs no turn.
 */
export async function openSessionOf(host: HostContext, sessionId: string): Promise<SessionAccess | null> {
  const open = host.runtime.openHandle(sessionId);
  if (open?.isOpen) return new LocalSession(open, host.runtime);
  return heldElsewhere(host, sessionId);
}

/**
 * In a cluster, most requests for a session not open here are for one another host holds: a plain
 * read of its lease routes them without the locking transaction that taking a session is (the
 * owner's writes would wait on it). Anything else — free, expired, unknown — goes the local way.
 */
async function heldElsewhere(host: HostContext, sessionId: string): Promise<SessionAccess | null> {
  // A malformed id is the local path's to refuse (400), never a query.
  if (!host.router || host.runtime.isOpen(sessionId) || !sessionIdSchema.safeParse(sessionId).success) return null;
  const holder = await viaStorage(() => host.storage.leaseHolder(sessionId));
  if (!holder || holder.ownerId === host.runtime.ownership.identity.ownerId) return null;
  return host.router.remote(sessionId, holder);
}

/** The session opened in this host's runtime; `SessionOwnedElsewhere` while another runtime holds it. */
export async function localHandle(host: HostContext, sessionId: string): Promise<SessionHandle> {
  const open = host.runtime.openHandle(sessionId);
  if (open?.isOpen) return reloadedIfRequired(open);
  return host.limits.sessions.open(sessionId);
}

/**
 * A session whose checkpoint was stored but could not be read back (storage failed in between)
 * takes no turn until its conversation is reloaded; the API has no reload command, so the host
 * reloads it here, before the request's own command. While storage still fails the reload fails
 * too, and the command answers `ReloadRequired` as before.
 */
async function reloadedIfRequired(session: SessionHandle): Promise<SessionHandle> {
  if (session.actor.getSnapshot().context.reloadRequired) await session.reload();
  return session;
}

/** A command's answer: its value, or the typed error it carried, thrown for the app's error handler. */
export function unwrap<T extends { ok: true }, E extends { code: string; message?: string }>(result: T | { ok: false; error: E }): T {
  if (result.ok) return result;
  const { code, message, ...details } = result.error;
  throw new ApiError(code, message ?? defaultMessage(code), details);
}
