import type { SessionStorage } from '../../storage/session-storage.js';
import type { Warn } from '../protocol/log-fields.js';
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
import type { PrincipalQuotas } from './principal-quotas.js';
import type { SseOptions } from './sse-stream.js';
import type { StreamLimit } from './stream-limit.js';
import type { TaskClient } from '../tasks/task-client.js';
import type { LeaseHolder } from '../protocol/session-owner.js';
import type { AgentDirectory } from './agent-directory.js';
import { mayAccess, type Caller } from '../protocol/principal.js';
import type { ClusterReadings } from '../telemetry/metrics-sources.js';
import type { TurnchartMetrics } from '../telemetry/metrics.js';

/** How a host in a cluster reaches a session another host holds. */
interface SessionRouter {
  /** A proxy with the same command surface that routes every command to the session's holder. */
  remote(sessionId: string, holder: LeaseHolder, caller: Caller): SessionAccess;
}

/** This host's membership of a cluster: the router the routes use, and how to leave. */
export interface ClusterMembership {
  router: SessionRouter;
  /** Stops the lease sweep: called before the runtime shuts down, so the sweep opens nothing more. */
  quiesce(): void;
  /** Ends remote streams, waits for unconfirmed updates (the sessions' `closed` among them), closes the connection. */
  close(): Promise<void>;
  /** Issue 27: routed commands by result and the broker link's reconnects, for the host's metrics. */
  readings?(): ClusterReadings;
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
  warn: Warn;
  /** Submitting and controlling tasks: null when the host runs without RabbitMQ. */
  tasks: TaskClient | null;
  /** Whether the last storage check failed (read by `/healthz`). */
  storageDown: boolean;
  /** The inspector page: its watches, its session list, and where its built assets are. */
  inspector: { hub: InspectHub; list: SessionListFeed; assets: string };
  /** Set when the host is one of a cluster: sessions held elsewhere are routed rather than refused. */
  router?: SessionRouter | null;
  /**
   * The host's capacity: every session a request opens, and every stream, is taken through these;
   * both also hold the caller to its principal's quotas, which turn requests go through too (issue 25).
   */
  limits: { sessions: SessionLimit; streams: StreamLimit; principals: PrincipalQuotas };
  /** What `GET /metrics` serves (issue 27). */
  metrics: TurnchartMetrics;
}

/**
 * The session a request is about, if the caller may see it (issue 25): another principal's session
 * answers `UnknownSession` exactly as a missing one does, so its existence does not leak. Open
 * here, or free to take (nobody holds it, or its lease ran out): a local session, opened again from
 * storage when it was closed for being idle. Held by another live host: `SessionOwnedElsewhere`, or
 * in a cluster a proxy to that host, which checks the caller again.
 */
export async function sessionOf(host: HostContext, sessionId: string, caller: Caller): Promise<SessionAccess> {
  const open = host.runtime.openHandle(sessionId);
  if (open?.isOpen) return new LocalSession(await reloadedIfRequired(visibleTo(caller, open)), host.runtime);
  const remote = await standingOf(host, sessionId, caller);
  if (remote) return remote;
  try {
    return new LocalSession(visibleTo(caller, await localHandle(host, sessionId, caller)), host.runtime);
  } catch (error) {
    if (!(error instanceof SessionOwnedElsewhereError) || !host.router) throw error;
    return host.router.remote(sessionId, error.holder, caller);
  }
}

/**
 * The session if it is open somewhere — here, or (in a cluster) held by another live host — and
 * the caller may see it; null otherwise, and nothing is opened to find that out. What is not open
 * anywhere runs no turn.
 */
export async function openSessionOf(host: HostContext, sessionId: string, caller: Caller): Promise<SessionAccess | null> {
  const open = host.runtime.openHandle(sessionId);
  if (open?.isOpen) return mayAccess(caller, open.principal) ? new LocalSession(open, host.runtime) : null;
  if (!host.router || !sessionIdSchema.safeParse(sessionId).success) return null;
  const standing = await viaStorage(() => host.storage.sessionStanding(sessionId));
  if (!standing?.holder || !mayAccess(caller, standing.principal) || standing.holder.ownerId === host.runtime.ownership.identity.ownerId) return null;
  return host.router.remote(sessionId, standing.holder, caller);
}

/**
 * A session not open here is read first: whose it is (another principal's is refused before
 * anything is opened for it) and, in a cluster, whether another live host holds it — most requests
 * for a session not open here are for one another host holds, and a plain read routes them without
 * the locking transaction that taking a session is (the owner's writes would wait on it). Anything
 * else — free, expired — goes the local way (null).
 */
async function standingOf(host: HostContext, sessionId: string, caller: Caller): Promise<SessionAccess | null> {
  // A malformed id is the local path's to refuse (400), never a query.
  if (!sessionIdSchema.safeParse(sessionId).success) return null;
  const standing = await viaStorage(() => host.storage.sessionStanding(sessionId));
  if (!standing || !mayAccess(caller, standing.principal)) throw unknownSession(sessionId);
  if (!host.router || !standing.holder || standing.holder.ownerId === host.runtime.ownership.identity.ownerId) return null;
  return host.router.remote(sessionId, standing.holder, caller);
}

/** The stored session, read without opening it, if the caller may see it (its messages, its audit). */
export async function storedSessionOf(host: HostContext, sessionId: string, caller: Caller): Promise<void> {
  const standing = await viaStorage(() => host.storage.sessionStanding(sessionId));
  if (!standing || !mayAccess(caller, standing.principal)) throw unknownSession(sessionId);
}

/** The session opened in this host's runtime (as `localHandle`), if the caller may see it; nothing is opened for another's. */
export async function localHandleFor(host: HostContext, sessionId: string, caller: Caller): Promise<SessionHandle> {
  if (!host.runtime.openHandle(sessionId)?.isOpen) await storedSessionOf(host, sessionId, caller);
  return visibleTo(caller, await localHandle(host, sessionId, caller));
}

/** The session if the caller may see it; `UnknownSession`, as for one that does not exist, if not. */
export function visibleTo(caller: Caller, session: SessionHandle): SessionHandle {
  if (mayAccess(caller, session.principal)) return session;
  throw unknownSession(session.id);
}

/** What a caller is told of a session that is not there, or not theirs: the same words either way. */
function unknownSession(sessionId: string): ApiError {
  return new ApiError('UnknownSession', `no session '${sessionId}'`);
}

/**
 * The session opened in this host's runtime; `SessionOwnedElsewhere` while another runtime holds it.
 * Opening it counts against `caller`'s quota of open sessions (issue 25); a command another host
 * routed here has none to give (that host checked it).
 */
export async function localHandle(host: HostContext, sessionId: string, caller?: Caller): Promise<SessionHandle> {
  const open = host.runtime.openHandle(sessionId);
  if (open?.isOpen) return reloadedIfRequired(open);
  return host.limits.sessions.open(sessionId, caller);
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
