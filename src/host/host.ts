import { resolve } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { PermissionMode, SessionStorage } from '../../storage/session-storage.js';
import { postgresStorage } from '../../storage/postgres.js';
import { sqliteStorage } from '../../storage/sqlite.js';
import { postgresTaskStorage } from '../../storage/postgres.js';
import { sqliteTaskStorage } from '../../storage/sqlite.js';
import type { TaskStorage } from '../../storage/task-storage.js';
import type { TaskClient } from '../tasks/task-client.js';
import { AmqpLink } from '../transport/amqp-link.js';
import type { ModelPort } from '../protocol/model.js';
import { permissionModeSchema } from '../protocol/commands.js';
import { TurnchartError } from '../protocol/errors.js';
import { joinCluster, type ClusterOptions } from '../cluster/cluster.js';
import { DEFAULT_LEASE_TTL_MS } from '../runtime/ownership.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../runtime/runtime.js';
import { workspaceTools } from '../tools/workspace/index.js';
import { InspectHub } from '../inspect/inspect-hub.js';
import { SessionListFeed } from '../inspect/session-list.js';
import { statelyForward, type StatelyForward } from '../inspect/stately-forward.js';
import { createApp } from './app.js';
import { defaultInspectorAssets } from './inspector-assets.js';
import type { HostContext } from './host-context.js';
import { DEFAULT_SSE_OPTIONS, type SseOptions } from './sse-stream.js';

export interface HostOptions {
  /** Interface to bind; anything but loopback needs a token. */
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** SQLite file (the default storage) … */
  db?: string;
  /** … or a PostgreSQL URL, which wins. */
  databaseUrl?: string;
  /** A storage built by the embedder (tests wrap one in `withFaults`); wins over `db` and `databaseUrl`. */
  storage?: SessionStorage;
  /** The directory every session works in (its tools are confined to it). */
  workspace: string;
  model: ModelPort;
  /** The permission mode of sessions created without one (the AI SDK endpoint's, `POST /sessions` without `permissionMode`); `ask` by default. */
  permissionMode?: PermissionMode;
  token?: string | null;
  /** Sessions idle this long (seconds) are closed and reopened from storage on their next request. */
  idleTtlSeconds: number;
  corsOrigin?: string | null;
  sse?: Partial<SseOptions>;
  /** Joins a cluster of hosts on one database and one RabbitMQ: sessions held by other hosts are routed to them. */
  cluster?: ClusterOptions | null;
  /** RabbitMQ, for the task routes (`POST /tasks` …); without it they answer 503. */
  amqpUrl?: string;
  /** The broker names' namespace for tasks (`turnchart` by default). */
  amqpNamespace?: string;
  /** The task storage built by the embedder; by default the same database as the sessions. */
  taskStorage?: TaskStorage;
  /** Passed to the runtime as they are (agents, lease length, …). */
  runtime?: Partial<Omit<RuntimeOptions, 'storage' | 'model'>>;
  warn?: (message: string) => void;
  /** Where the built inspector page is (default: `dist/visualizer` of the package). */
  inspectorAssets?: string;
  /** A WebSocket URL to forward every session's inspection events to, in `@statelyai/inspect`'s format. */
  statelyInspect?: string | null;
}

export interface RunningHost {
  url: string;
  runtime: Runtime;
  /** Ends running turns (`actor_stopped`), closes SSE streams and connections, then storage. */
  close(): Promise<void>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** Starts the service: storage, runtime, the HTTP API; resolves once it accepts connections. */
export async function startHost(options: HostOptions): Promise<RunningHost> {
  const token = options.token ?? null;
  if (!LOOPBACK.test(options.host) && token === null) {
    throw new TurnchartError('InsecureBinding', `refusing to listen on ${options.host} without a token: set --token or TURNCHART_TOKEN, or bind to 127.0.0.1`);
  }
  const warn = options.warn ?? ((message: string) => console.warn(`turnchart: ${message}`));
  const workspaceDir = resolve(options.workspace);
  const context = { storageDown: false } as HostContext;
  const storage = openStorage(options, (error) => {
    context.storageDown = true;
    warn(`database connection lost: ${error.message}`);
  });
  const forward: StatelyForward | null = options.statelyInspect ? statelyForward(options.statelyInspect, { warn }) : null;
  const userInspect = options.runtime?.inspect;
  const runtime = await createRuntime({
    ...options.runtime,
    ...(forward && { inspect: userInspect ? (event) => (userInspect(event), forward.inspect(event)) : (event) => forward.inspect(event) }),
    storage,
    model: options.model,
    tools: [...workspaceTools({ root: workspaceDir }), ...(options.runtime?.tools ?? [])],
    idleTtlMs: options.idleTtlSeconds * 1000,
    warn,
  }).catch(async (error: unknown) => {
    await storage.close().catch(() => undefined);
    await forward?.close();
    throw error;
  });
  const defaultPermissionMode = permissionModeSchema.parse(options.permissionMode ?? 'ask');
  const inspector = {
    hub: new InspectHub(),
    list: new SessionListFeed(runtime, storage, 2_000, warn),
    assets: options.inspectorAssets ?? defaultInspectorAssets(),
  };
  const tasks = options.amqpUrl ? await openTasks(options, options.amqpUrl, warn).catch(async (error: unknown) => {
    await runtime.shutdown();
    await forward?.close();
    throw error;
  }) : null;
  Object.assign(context, { runtime, storage, workspaceDir, defaultPermissionMode, sse: { ...DEFAULT_SSE_OPTIONS, ...options.sse }, warn, inspector, tasks });
  const cluster = options.cluster
    ? await joinCluster(context, options.cluster, options.runtime?.ownership?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS).catch(async (error: unknown) => {
        await runtime.shutdown();
        await forward?.close();
        await tasks?.link.close();
        await tasks?.tasks.close();
        throw error;
      })
    : null;
  context.router = cluster?.router ?? null;
  const app = createApp(context, { token, corsOrigin: options.corsOrigin ?? null });
  const server = await listen(app.fetch, options.host, options.port).catch(async (error: unknown) => {
    cluster?.quiesce();
    await runtime.shutdown();
    await forward?.close();
    await tasks?.link.close();
    await tasks?.tasks.close();
    await cluster?.close();
    throw error;
  });
  const { port } = server.address() as AddressInfo;
  const hostPart = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${hostPart}:${port}`,
    runtime,
    close: () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((done) => server.close(() => done()));
        cluster?.quiesce();
        await runtime.shutdown();
        await forward?.close();
        await tasks?.link.close();
        await tasks?.tasks.close();
        // After the runtime: the sessions it closed tell the streams following them on other hosts.
        await cluster?.close();
        // SSE streams ended with their sessions; what is left are idle keep-alive sockets and held `?wait` requests.
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        await stopped;
      })()),
  };
}

/** The task side of the host: the task storage (migrated) and a link to RabbitMQ. */
async function openTasks(options: HostOptions, amqpUrl: string, warn: (message: string) => void): Promise<TaskClient> {
  const tasks =
    options.taskStorage ??
    (options.databaseUrl
      ? postgresTaskStorage({ connectionString: options.databaseUrl })
      : sqliteTaskStorage({ filename: options.db ?? resolve('.turnchart', 'turnchart.db') }));
  try {
    await tasks.migrate();
    const link = await AmqpLink.open({ url: amqpUrl, name: `turnchart-host-${process.pid}`, warn });
    return { tasks, link, ...(options.amqpNamespace && { namespace: options.amqpNamespace }) };
  } catch (error) {
    await tasks.close().catch(() => undefined);
    throw error;
  }
}

function openStorage(options: HostOptions, onConnectionError: (error: Error) => void): SessionStorage {
  if (options.storage) return options.storage;
  if (options.databaseUrl) return postgresStorage({ connectionString: options.databaseUrl, onConnectionError });
  return sqliteStorage({ filename: options.db ?? resolve('.turnchart', 'turnchart.db') });
}

function listen(fetch: (request: Request) => Response | Promise<Response>, hostname: string, port: number): Promise<ServerType> {
  return new Promise((resolvePromise, reject) => {
    const server = serve({ fetch, hostname, port }, () => resolvePromise(server));
    server.once('error', reject);
    server.on('clientError', answerUnparsable);
  });
}

/**
 * A request Node's HTTP parser refuses (headers over its 16 KiB limit, a malformed request line,
 * a header timeout) never reaches the app; it is answered in the API's error shape all the same,
 * where Node's own answer has no body. As Node does, only when no response is under way on the
 * connection; then the connection is closed.
 */
function answerUnparsable(error: NodeJS.ErrnoException, socket: Duplex): void {
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const [status, reason, code, message] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'HeadersTooLarge', 'request headers are limited to 16 KiB']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'RequestTimeout', 'the request took too long to arrive']
          : [400, 'Bad Request', 'InvalidInput', 'malformed HTTP request'];
    const body = JSON.stringify({ error: { code, message } });
    socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}
