import { resolve } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SessionStorage } from '../../storage/session-storage.js';
import { postgresStorage, postgresTaskStorage } from '../../storage/postgres.js';
import { sqliteStorage, sqliteTaskStorage } from '../../storage/sqlite.js';
import type { TaskStorage } from '../../storage/task-storage.js';
import type { TaskClient } from '../tasks/task-client.js';
import { AmqpLink } from '../transport/amqp-link.js';
import type { ModelPort } from '../protocol/model.js';
import { TurnchartError } from '../protocol/errors.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../runtime/runtime.js';
import { workspaceTools } from '../tools/workspace/index.js';
import { createApp } from './app.js';
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
  token?: string | null;
  /** Sessions idle this long (seconds) are closed and reopened from storage on their next request. */
  idleTtlSeconds: number;
  corsOrigin?: string | null;
  sse?: Partial<SseOptions>;
  /** RabbitMQ, for the task routes (`POST /tasks` …); without it they answer 503. */
  amqpUrl?: string;
  /** The broker names' namespace for tasks (`turnchart` by default). */
  amqpNamespace?: string;
  /** The task storage built by the embedder; by default the same database as the sessions. */
  taskStorage?: TaskStorage;
  /** Passed to the runtime as they are (agents, lease length, …). */
  runtime?: Partial<Omit<RuntimeOptions, 'storage' | 'model'>>;
  warn?: (message: string) => void;
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
  const runtime = await createRuntime({
    ...options.runtime,
    storage,
    model: options.model,
    tools: [...workspaceTools({ root: workspaceDir }), ...(options.runtime?.tools ?? [])],
    idleTtlMs: options.idleTtlSeconds * 1000,
    warn,
  }).catch(async (error: unknown) => {
    await storage.close().catch(() => undefined);
    throw error;
  });
  const tasks = options.amqpUrl ? await openTasks(options, options.amqpUrl, warn).catch(async (error: unknown) => {
    await runtime.shutdown();
    throw error;
  }) : null;
  Object.assign(context, { runtime, storage, workspaceDir, sse: { ...DEFAULT_SSE_OPTIONS, ...options.sse }, warn, tasks });
  const app = createApp(context, { token, corsOrigin: options.corsOrigin ?? null });
  const server = await listen(app.fetch, options.host, options.port);
  const { port } = server.address() as AddressInfo;
  const hostPart = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${hostPart}:${port}`,
    runtime,
    close: () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((done) => server.close(() => done()));
        await runtime.shutdown();
        await tasks?.link.close();
        await tasks?.tasks.close();
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
