import { createServer, type Server } from 'node:http';
import { resolve } from 'node:path';
import { z } from 'zod';
import { getRequestListener, RequestError, type Http2Bindings, type HttpBindings } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SessionStorage } from '../../storage/session-storage.js';
import { postgresStorage } from '../../storage/postgres.js';
import { sqliteStorage } from '../../storage/sqlite.js';
import { postgresTaskStorage } from '../../storage/postgres.js';
import { sqliteTaskStorage } from '../../storage/sqlite.js';
import { HistoryMirror } from '../../storage/history-mirror.js';
import type { TaskStorage } from '../../storage/task-storage.js';
import type { TaskClient } from '../tasks/task-client.js';
import { AmqpLink } from '../transport/amqp-link.js';
import type { ModelPort } from '../protocol/model.js';
import { permissionModeSchema, type PermissionMode } from '../protocol/commands.js';
import { TurnchartError } from '../protocol/errors.js';
import { DEFAULT_LEASE_TTL_MS } from '../runtime/ownership.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../runtime/runtime.js';
import { sqliteStatePaths, workspaceTools } from '../tools/workspace/index.js';
import { reapLeftoverCommands } from '../tools/sandbox/command-ledger.js';
import type { SandboxChoice } from '../tools/sandbox/command-sandbox.js';
import { McpServers, usesWorkspace, type McpServersConfig } from '../tools/mcp/index.js';
import { InspectHub } from '../inspect/inspect-hub.js';
import { SessionListFeed } from '../inspect/session-list.js';
import { statelyForward, type StatelyForward } from '../inspect/stately-forward.js';
import { AgentDirectory, type AgentNote } from './agent-directory.js';
import { createApp } from './app.js';
import { answerWithDeferred } from './deferred-body.js';
import { atWriteTime } from './write-batch.js';
import { authentication, type Authenticate } from './auth.js';
import { JwtVerifier, type JwtSettings } from './jwt-verifier.js';
import { allowedHostSchema } from './host-check.js';
import { defaultInspectorAssets } from './inspector-assets.js';
import type { HostCluster, HostContext } from './host-context.js';
import { DEFAULT_MAX_SESSIONS, SessionLimit } from './session-limit.js';
import { DEFAULT_SSE_OPTIONS, type SseOptions } from './sse-stream.js';
import { DEFAULT_MAX_STREAMS, StreamLimit } from './stream-limit.js';
import { DEFAULT_PRINCIPAL_QUOTAS, PrincipalQuotas } from './principal-quotas.js';
import { messageOf } from '../protocol/error-message.js';
import { TurnchartMetrics } from '../telemetry/metrics.js';
import { listenForMetrics, type MetricsListener } from '../telemetry/metrics-server.js';
import { SpanMetrics } from '../telemetry/metrics-spans.js';
import { readSources } from '../telemetry/metrics-sources.js';
import { countingStorageErrors } from '../telemetry/metrics-storage.js';
import type { Warn } from '../protocol/log-fields.js';
import { otelSpans, type OtelSpanOptions, type OtelSpans } from '../telemetry/otel-spans.js';

export interface HostOptions {
  /** Interface to bind; anything but loopback needs a token, JWT keys or `authenticate`. */
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
  /** How `GET /agents` names the model of agents without one of their own (default: `the host's model`). */
  modelDescription?: string;
  /** Descriptions of the runtime's agents, and of the models of those with their own (`GET /agents`). */
  agentNotes?: Record<string, AgentNote>;
  /** The permission mode of sessions created without one (the AI SDK endpoint's, `POST /sessions` without `permissionMode`); `ask` by default. */
  permissionMode?: PermissionMode;
  /** A shared secret: its holder is the operator, an admin who sees every principal's sessions. */
  token?: string | null;
  /**
   * Signed identities (issue 25): a bearer JWT's `sub` is the principal, who sees only what it
   * created; `roles` holding `admin` sees everything. HS256 with a shared secret, or RS256/ES256 with
   * the issuer's JWKS (fetched, cached, refreshed on an unknown key).
   */
  jwt?: JwtSettings | null;
  /** The embedder's own scheme (cookies, a gateway's header), asked before JWTs: the request's caller, or null. */
  authenticate?: Authenticate | null;
  /** Sessions idle this long (seconds) are closed and reopened from storage on their next request. */
  idleTtlSeconds: number;
  corsOrigin?: string | null;
  /** Names (or addresses) a request's Host header may give besides the bound address and loopback, with any port: those a proxy in front forwards. */
  allowedHosts?: readonly string[];
  /** Sessions open at once, past which a request that would open one more is refused (503 `HostAtCapacity`); 1 000 by default. */
  maxSessions?: number;
  /** Concurrent streams (SSE, the AI SDK's responses), past which a new one is refused (503 `TooManyStreams`); 1 000 by default. */
  maxStreams?: number;
  /*
   * Issue 25: each principal's quotas, counted in the database across every host on it and checked
   * on the host a request reaches; past one a request is refused `429 QuotaExceeded` with `quota`,
   * `limit` and `Retry-After`. Admins (the operator of a shared token or of no auth among them) are
   * held only to the host's limits above.
   */
  /** Sessions a principal holds open at once, on any host: 100 by default. */
  maxSessionsPerPrincipal?: number;
  /** Turns of a principal's sessions running or queued at once: 10 by default. */
  maxRunningTurnsPerPrincipal?: number;
  /** Turns of a principal's sessions started in any 60 s: 60 by default. */
  turnsPerMinutePerPrincipal?: number;
  /** Streams a principal holds open at once, on any host: 20 by default. */
  maxStreamsPerPrincipal?: number;
  /**
   * Input plus output tokens a principal's sessions may spend per UTC day; past it a new turn ends
   * `budget_exhausted` (the runtime's `dailyTokensPerPrincipal`). Off by default.
   */
  dailyTokensPerPrincipal?: number | null;
  sse?: Partial<SseOptions>;
  /** Joins a cluster of hosts on one database and one RabbitMQ: sessions held by other hosts are routed to them. */
  cluster?: HostCluster | null;
  /** RabbitMQ, for the task routes (`POST /tasks` …); without it they answer 503. */
  amqpUrl?: string;
  /** The broker names' namespace for tasks (`turnchart` by default). */
  amqpNamespace?: string;
  /**
   * Issue 30: a local SQLite file each session's new messages are copied to when one of its runs
   * ends (`--mirror-sqlite`), off the run's path; a failed copy is retried at the next run's end.
   */
  mirrorSqlite?: string | null;
  /** The task storage built by the embedder; by default the same database as the sessions. */
  taskStorage?: TaskStorage;
  /** Passed to the runtime as they are (agents, lease length, …). */
  runtime?: Partial<Omit<RuntimeOptions, 'storage' | 'model'>>;
  /** Where non-fatal notes go, with the session, turn or task they are about as fields (issue 27); default `console.warn`. */
  warn?: Warn;
  /** Where the built inspector page is (default: `dist/visualizer` of the package). */
  inspectorAssets?: string;
  /** A WebSocket URL to forward every session's inspection events to, in `@statelyai/inspect`'s format. */
  statelyInspect?: string | null;
  /**
   * MCP servers whose tools (`<server>__<tool>`) the runtime offers: started or connected once, before
   * the runtime, and shared by every session (`scope: "session"`: one connection per session, closed
   * when the session closes); one that cannot start is a warning (its tools absent) unless
   * `required`, which fails the start. Closed after the runtime.
   */
  mcpServers?: McpServersConfig;
  /** Variables of this process's environment run_command's commands get besides the baseline (`workspaceTools({ commandEnv })`). */
  commandEnv?: readonly string[];
  /** `process-group` forces run_command's fallback containment (`workspaceTools({ commandContainment })`). */
  commandContainment?: 'auto' | 'process-group';
  /**
   * run_command's sandbox (`workspaceTools({ sandbox })`): `auto` (default) bubblewrap when it works,
   * else none with one `warn` line; `bwrap` or a `SandboxUnavailable` error; `off`.
   */
  sandbox?: SandboxChoice;
  /**
   * How long a request's headers, and the whole request, may take to arrive before it is answered
   * 408 and its connection closed (a slowloris client), and how often that is checked: Node's
   * `headersTimeout` (60 s), `requestTimeout` (300 s) and `connectionsCheckingInterval` (30 s) by default.
   */
  requestTimeouts?: { headersMs?: number; requestMs?: number; checkIntervalMs?: number };
  /**
   * Issue 27: a second listener on this port (0 picks a free one) that serves only `GET /metrics`,
   * without a token, for a scraper on a private network; none by default (`GET /metrics` on the API
   * is there either way, behind its authentication).
   */
  metricsPort?: number | null;
  /** The interface of the metrics listener: `host`'s by default. */
  metricsHost?: string;
  /**
   * Issue 27: report the runtime's turns, model calls and tool calls as OpenTelemetry spans (GenAI
   * conventions) to `@opentelemetry/api`'s global tracer — the SDK is the embedder's to register
   * (`turnchart serve --otel` starts one); `recordContent` adds message contents. Off by default.
   */
  otel?: OtelSpanOptions | null;
}

export interface RunningHost {
  url: string;
  runtime: Runtime;
  /** `http://…/metrics` of the `metricsPort` listener; null without one. */
  metricsUrl: string | null;
  /** The span exporter with `otel` set: `traceIdOf(turnId)` names an open turn's trace (for log lines); null without. */
  otel: OtelSpans | null;
  /** Ends running turns (`actor_stopped`), closes SSE streams and connections, then storage. */
  close(): Promise<void>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

const limitsSchema = z.object({
  allowedHosts: z.array(allowedHostSchema).default([]),
  maxSessions: z.number().int().min(1).default(DEFAULT_MAX_SESSIONS),
  maxStreams: z.number().int().min(1).default(DEFAULT_MAX_STREAMS),
  maxSessionsPerPrincipal: z.number().int().min(1).default(DEFAULT_PRINCIPAL_QUOTAS.sessions),
  maxRunningTurnsPerPrincipal: z.number().int().min(1).default(DEFAULT_PRINCIPAL_QUOTAS.runningTurns),
  turnsPerMinutePerPrincipal: z.number().int().min(1).default(DEFAULT_PRINCIPAL_QUOTAS.turnsPerMinute),
  maxStreamsPerPrincipal: z.number().int().min(1).default(DEFAULT_PRINCIPAL_QUOTAS.streams),
  dailyTokensPerPrincipal: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).nullable().default(null),
  metricsPort: z.number().int().min(0).max(65_535).nullable().default(null),
  metricsHost: z.string().min(1).optional(),
});

/** Starts the service: storage, runtime, the HTTP API; resolves once it accepts connections. */
export async function startHost(options: HostOptions): Promise<RunningHost> {
  const token = options.token ?? null;
  // Built first: bad JWT settings are a startup error.
  const auth = authentication({ token, jwt: options.jwt ? new JwtVerifier(options.jwt) : null, authenticate: options.authenticate ?? null });
  if (!LOOPBACK.test(options.host) && !auth.required) {
    throw new TurnchartError(
      'InsecureBinding',
      `refusing to listen on ${options.host} without authentication: set --token (TURNCHART_TOKEN), --jwt-secret or --jwks-url, or bind to 127.0.0.1`,
    );
  }
  const checked = limitsSchema.safeParse({
    allowedHosts: options.allowedHosts,
    maxSessions: options.maxSessions,
    maxStreams: options.maxStreams,
    maxSessionsPerPrincipal: options.maxSessionsPerPrincipal,
    maxRunningTurnsPerPrincipal: options.maxRunningTurnsPerPrincipal,
    turnsPerMinutePerPrincipal: options.turnsPerMinutePerPrincipal,
    maxStreamsPerPrincipal: options.maxStreamsPerPrincipal,
    dailyTokensPerPrincipal: options.dailyTokensPerPrincipal,
    metricsPort: options.metricsPort,
    metricsHost: options.metricsHost,
  });
  if (!checked.success) throw new TurnchartError('InvalidOptions', z.prettifyError(checked.error));
  const { allowedHosts, maxSessions, maxStreams, dailyTokensPerPrincipal } = checked.data;
  const warn: Warn = options.warn ?? ((message: string) => console.warn(`turnchart: ${message}`));
  const workspaceDir = resolve(options.workspace);
  // What must never reach a command or an MCP server's environment.
  const hostSecrets = [token, options.jwt && 'secret' in options.jwt.keys ? options.jwt.keys.secret : null, options.databaseUrl, options.amqpUrl, ...(options.cluster?.secrets ?? [])];
  // The SQLite database holds every user's sessions: no tool, and no sandboxed command, reaches it through the workspace.
  const stateFile = sqliteFileOf(options);
  // Built before anything is opened: a variable that may not reach commands is a startup error.
  const workspace = workspaceTools({
    root: workspaceDir,
    // The history mirror holds every user's conversations too.
    hiddenPaths: [stateFile, options.mirrorSqlite ?? null].flatMap((file) => (file === null ? [] : sqliteStatePaths(file, workspaceDir))),
    ...(options.commandEnv && { commandEnv: options.commandEnv }),
    ...(options.commandContainment && { commandContainment: options.commandContainment }),
    ...(options.sandbox && { sandbox: options.sandbox }),
    hostSecrets,
    warn,
  });
  const commandSandbox = workspace.find((tool) => tool.name === 'run_command')?.sandbox;
  if ((options.jwt || options.authenticate) && commandSandbox?.kind === 'off') {
    // Each user's files are kept apart by the sandbox alone where commands are concerned.
    warn(`many users and no sandbox (${commandSandbox.reason}): each user's commands can read and change every other user's files; run with --sandbox bwrap`);
  }
  if (options.jwt || options.authenticate) {
    // A server started once for the host sees the whole workspace, whoever calls it.
    for (const [name, server] of Object.entries(options.mcpServers ?? {})) {
      if (server.scope !== 'session' && usesWorkspace(server)) warn(`many users and mcpServers.${name} in scope "host": it works in the whole workspace for every user; scope "session" gives each user's sessions their own directory`);
    }
  }
  // Commands a dead host left running end before restart correction reports their turns interrupted.
  await reapLeftoverCommands({ warn });
  const metrics = new TurnchartMetrics();
  const context = { storageDown: false, metrics } as HostContext;
  const storage = countingStorageErrors(
    openStorage(options, (error) => {
      context.storageDown = true;
      warn(`database connection lost: ${error.message}`);
    }),
    metrics,
  );
  const forward: StatelyForward | null = options.statelyInspect ? statelyForward(options.statelyInspect, { warn }) : null;
  // Before the runtime, whose toolset reads their tools; a required server that cannot start stops the host here.
  const mcp = options.mcpServers && Object.keys(options.mcpServers).length > 0
    ? await McpServers.start(options.mcpServers, { warn, secrets: hostSecrets, workspace: workspaceDir }).catch(async (error: unknown) => {
        await storage.close().catch(() => undefined);
        await forward?.close();
        throw error;
      })
    : null;
  const userInspect = options.runtime?.inspect;
  const runtime = await createRuntime({
    ...options.runtime,
    ...(forward && { inspect: userInspect ? (event) => (userInspect(event), forward.inspect(event)) : (event) => forward.inspect(event) }),
    storage,
    model: options.model,
    tools: [...workspace, ...(options.runtime?.tools ?? [])],
    toolSources: [...(mcp?.sources ?? []), ...(options.runtime?.toolSources ?? [])],
    idleTtlMs: options.idleTtlSeconds * 1000,
    ...(dailyTokensPerPrincipal !== null && { dailyTokensPerPrincipal }),
    warn,
  }).catch(async (error: unknown) => {
    await storage.close().catch(() => undefined);
    await forward?.close();
    await mcp?.close();
    throw error;
  });
  // From the runtime's first span: no turn runs before the host is built.
  const otel = options.otel ? otelSpans(runtime, options.otel) : null;
  runtime.observeSpans(new SpanMetrics(metrics));
  const mirror = options.mirrorSqlite
    ? await HistoryMirror.open(options.mirrorSqlite, storage, warn).catch(async (error: unknown) => {
        await runtime.shutdown();
        await forward?.close();
        await mcp?.close();
        throw error;
      })
    : null;
  // A run's end notes its session for the mirror; the copy happens after, never on the run's path.
  if (mirror) {
    runtime.updates$.subscribe((envelope) => {
      if (envelope.update.type === 'turn_finished') mirror.runEnded(envelope.sessionId);
    });
  }
  // A session-scoped MCP server's own connection for a session ends with the session (the runtime completes this on shutdown).
  if (mcp) runtime.sessionClosed$.subscribe((sessionId) => void mcp.closeSession(sessionId));
  const defaultPermissionMode = permissionModeSchema.parse(options.permissionMode ?? 'ask');
  const inspector = {
    hub: new InspectHub(),
    list: new SessionListFeed(runtime, storage, 2_000, warn),
    assets: options.inspectorAssets ?? defaultInspectorAssets(),
  };
  const tasks = options.amqpUrl ? await openTasks(options, options.amqpUrl, warn).catch(async (error: unknown) => {
    await runtime.shutdown();
    await mirror?.close();
    await forward?.close();
    await mcp?.close();
    throw error;
  }) : null;
  const principals = new PrincipalQuotas(
    storage,
    {
      sessions: checked.data.maxSessionsPerPrincipal,
      runningTurns: checked.data.maxRunningTurnsPerPrincipal,
      turnsPerMinute: checked.data.turnsPerMinutePerPrincipal,
      streams: checked.data.maxStreamsPerPrincipal,
    },
    {
      ownerId: runtime.ownership.identity.ownerId,
      slotTtlMs: options.runtime?.ownership?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
      now: options.runtime?.now ?? Date.now,
      warn,
    },
  );
  const limits = { sessions: new SessionLimit(runtime, maxSessions, principals), streams: new StreamLimit(maxStreams, principals), principals };
  const agents = new AgentDirectory(runtime, options.agentNotes ?? {}, options.modelDescription ?? "the host's model");
  const sse = { ...DEFAULT_SSE_OPTIONS, ...options.sse, lagged: () => limits.streams.clientLagged() };
  Object.assign(context, { runtime, storage, workspaceDir, defaultPermissionMode, agents, sse, warn, inspector, tasks, limits });
  const cluster = options.cluster
    ? await options.cluster.join(context, options.runtime?.ownership?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS).catch(async (error: unknown) => {
        await runtime.shutdown();
        await mirror?.close();
        await forward?.close();
        await tasks?.link.close();
        await tasks?.tasks.close();
        await mcp?.close();
        throw error;
      })
    : null;
  context.router = cluster?.router ?? null;
  readSources(metrics, {
    runtime,
    streams: limits.streams,
    cluster: () => cluster?.readings?.() ?? null,
    brokerLinks: () => tasks?.link.reconnects ?? 0,
    tasks: tasks?.tasks ?? null,
  });
  const app = createApp(context, { auth, corsOrigin: options.corsOrigin ?? null, hosts: { bound: options.host, allowed: allowedHosts } });
  const abandon = async (error: unknown): Promise<never> => {
    cluster?.quiesce();
    await runtime.shutdown();
    await mirror?.close();
    await forward?.close();
    await tasks?.link.close();
    await tasks?.tasks.close();
    await cluster?.close();
    await mcp?.close();
    throw error;
  };
  const server = await listen(app.fetch, options.host, options.port, options.requestTimeouts ?? {}).catch(abandon);
  const { metricsPort } = checked.data;
  const metricsListener: MetricsListener | null =
    metricsPort === null
      ? null
      : await listenForMetrics(metrics, checked.data.metricsHost ?? options.host, metricsPort, allowedHosts).catch(async (error: unknown) => {
          await new Promise<void>((done) => server.close(() => done()));
          return abandon(error);
        });
  const { port } = server.address() as AddressInfo;
  const hostPart = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${hostPart}:${port}`,
    runtime,
    metricsUrl: metricsListener?.url ?? null,
    otel: otel?.spans ?? null,
    close: () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((done) => server.close(() => done()));
        const metricsStopped = metricsListener?.close();
        cluster?.quiesce();
        // Before storage closes with the runtime: this host's stream slots stop counting against their principals.
        await principals.close();
        await runtime.shutdown();
        // After the runtime: the copy of its last runs' messages finishes first.
        await mirror?.close();
        // After the runtime, whose turns have ended their spans: what is still open ends now, to be exported.
        otel?.stop();
        // After the runtime: no turn calls their tools any more.
        await mcp?.close();
        await forward?.close();
        await tasks?.link.close();
        await tasks?.tasks.close();
        // After the runtime: the sessions it closed tell the streams following them on other hosts.
        await cluster?.close();
        // SSE streams ended with their sessions; what is left are idle keep-alive sockets and held `?wait` requests.
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        await stopped;
        await metricsStopped;
      })()),
  };
}

/** The task side of the host: the task storage (migrated) and a link to RabbitMQ. */
async function openTasks(options: HostOptions, amqpUrl: string, warn: (message: string) => void): Promise<TaskClient> {
  const tasks =
    options.taskStorage ??
    (options.databaseUrl
      ? postgresTaskStorage({ connectionString: options.databaseUrl })
      : sqliteTaskStorage({ filename: sqliteFile(options) }));
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
  return sqliteStorage({ filename: sqliteFile(options) });
}

function sqliteFile(options: HostOptions): string {
  return options.db ?? resolve('.turnchart', 'turnchart.db');
}

/** The SQLite file the host opens (for sessions, or for tasks as `openTasks` does), or null when it opens none. */
function sqliteFileOf(options: HostOptions): string | null {
  if (options.databaseUrl) return null;
  const forSessions = !options.storage;
  const forTasks = Boolean(options.amqpUrl) && !options.taskStorage;
  return forSessions || forTasks ? sqliteFile(options) : null;
}

function listen(
  fetch: (request: Request, env: HttpBindings | Http2Bindings) => Response | Promise<Response>,
  hostname: string,
  port: number,
  timeouts: NonNullable<HostOptions['requestTimeouts']>,
): Promise<Server> {
  return new Promise((resolvePromise, reject) => {
    // `serve` of @hono/node-server, but with an error handler for the requests it cannot build, and the bodies routes write to Node's response themselves.
    // Answers are written with the other socket writes of their turn of the event loop (`write-batch.ts`); a failure goes to the adapter at once.
    const answer = (request: Request, env: HttpBindings | Http2Bindings): Promise<Response> => {
      const answered = fetch(request, env);
      const written = (response: Response) =>
        new Promise<Response>((resolveAnswer, rejectAnswer) =>
          atWriteTime(() => {
            try {
              resolveAnswer(answerWithDeferred(response, env.outgoing));
            } catch (error) {
              rejectAnswer(error);
            }
          }),
        );
      return answered instanceof Promise ? answered.then(written) : written(answered);
    };
    const listener = getRequestListener(answer, { hostname, errorHandler: answerUnbuildable });
    const serverOptions = {
      ...(timeouts.headersMs !== undefined && { headersTimeout: timeouts.headersMs }),
      ...(timeouts.requestMs !== undefined && { requestTimeout: timeouts.requestMs }),
      ...(timeouts.checkIntervalMs !== undefined && { connectionsCheckingInterval: timeouts.checkIntervalMs }),
    };
    const server = createServer(serverOptions, (incoming, outgoing) => void listener(incoming, outgoing));
    server.listen(port, hostname, () => resolvePromise(server));
    server.once('error', reject);
    server.on('clientError', answerUnparsable);
  });
}

/**
 * A request @hono/node-server cannot make a `Request` of never reaches the app either. A Host
 * whose URL would name another host (`evil.example:1@127.0.0.1`) is misdirected, as the app answers
 * any Host that is not this host's; one no URL can be built with (`a, b`), or a malformed path, is
 * malformed (RFC 9112 §3.2 has an invalid Host answered 400). Both are answered in the API's error
 * shape, where the adapter's own answer is an empty 400, and the connection is closed.
 */
function answerUnbuildable(error: unknown): Response {
  const reason = messageOf(error);
  const [status, code, message] = !(error instanceof RequestError)
    ? [500, 'InternalError', 'the host could not answer this request']
    : /host header/i.test(reason)
      ? [421, 'MisdirectedRequest', 'the Host header names no address or name of this host']
      : [400, 'InvalidInput', `malformed request: ${reason}`];
  return Response.json({ error: { code, message } }, { status, headers: { connection: 'close' } });
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
