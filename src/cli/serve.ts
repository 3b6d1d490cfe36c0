import { z } from 'zod';
import { allowedHostSchema } from '../host/host-check.js';
import { clusterOf } from '../cluster/cluster.js';
import { startHost, type RunningHost } from '../host/host.js';
import type { JwtSettings } from '../host/jwt-verifier.js';
import { permissionModeSchema } from '../protocol/commands.js';
import { modelFromSpec, type ProviderSettings } from '../model/model-spec.js';
import { commandEnvFlagSchema } from '../tools/sandbox/command-environment.js';
import { sandboxChoiceSchema } from '../tools/sandbox/command-sandbox.js';
import { readSecretFile } from './secret-file.js';
import { secretsWrittenIn, type LoadedConfig } from './config-file.js';
import { resolveConfig, type ResolvedConfig } from './config-resolve.js';
import { layeredValues, settingsProblem } from './setting-layers.js';
import { LOG_FLAGS, loggerOf, logSettingsSchema } from './log-settings.js';
import type { Logger } from 'pino';
import { warnTo } from '../host/logger.js';
import type { TraceIdOf } from '../host/log-trace.js';
import { OTEL_FLAGS, otelSettingsProblem, otelSettingsSchema, withOtel } from './otel-settings.js';

/**
 * `turnchart serve`: each flag also read from its environment variable and from the configuration
 * file (its key the flag in camelCase); a flag wins over the variable, the variable over the file,
 * the file over the default; an empty variable is unset.
 */
const FLAGS = {
  config: { env: 'TURNCHART_CONFIG', help: 'configuration file (default: ./turnchart.config.ts, .mts, .mjs, .js or .json when there is one)' },
  host: { env: 'TURNCHART_HOST', help: 'interface to bind (default 127.0.0.1; anything else needs --token, --jwt-secret or --jwks-url)' },
  port: { env: 'TURNCHART_PORT', help: 'port (default 4477; 0 picks a free one)' },
  db: { env: 'TURNCHART_DB', help: 'SQLite file (default .turnchart/turnchart.db)' },
  'database-url': { env: 'DATABASE_URL', help: 'PostgreSQL URL (instead of SQLite)' },
  'mirror-sqlite': { env: 'TURNCHART_MIRROR_SQLITE', help: "SQLite file each session's new messages are copied to when one of its runs ends, for browsing offline with chat --db (default: none)" },
  'database-url-file': { env: 'DATABASE_URL_FILE', help: 'file holding the PostgreSQL URL (keeps its password off the command line)' },
  workspace: { env: 'TURNCHART_WORKSPACE', help: 'directory the sessions work in (default: the current directory)' },
  model: { env: 'TURNCHART_MODEL', help: 'openai-compatible:BASE_URL#MODEL or scripted:FILE (default: the demo model); API key from TURNCHART_API_KEY' },
  'context-window': { env: 'TURNCHART_CONTEXT_WINDOW', help: "the model's context window in tokens (default 128000)" },
  'max-output-tokens': { env: 'TURNCHART_MAX_OUTPUT_TOKENS', help: 'output tokens asked for per model call (default 8192)' },
  'max-reasoning-tokens': { env: 'TURNCHART_MAX_REASONING_TOKENS', help: 'reasoning tokens kept free of the window (default 0)' },
  'model-retries': { env: 'TURNCHART_MODEL_RETRIES', help: 'retries of a rate-limited or transiently failed model call (default 2)' },
  'stall-timeout': { env: 'TURNCHART_STALL_TIMEOUT', help: 'seconds without a stream part before a model call fails (default 180; 0: never)' },
  'provider-name': { env: 'TURNCHART_PROVIDER_NAME', help: "provider metadata key (default openai-compatible; 'google' for Gemini's endpoint)" },
  'permission-mode': { env: 'TURNCHART_PERMISSION_MODE', help: 'mode of sessions created without one: ask, auto or read_only (default ask)' },
  token: { env: 'TURNCHART_TOKEN', help: 'bearer token every route but /healthz requires (prefer the variable or --token-file)' },
  'token-file': { env: 'TURNCHART_TOKEN_FILE', help: 'file holding the bearer token' },
  'jwt-secret': { env: 'TURNCHART_JWT_SECRET', help: "HS256 secret (32 bytes or more) of the bearer JWTs whose `sub` is the caller: each user sees only their own sessions; `roles: [\"admin\"]` sees all" },
  'jwt-secret-file': { env: 'TURNCHART_JWT_SECRET_FILE', help: 'file holding the HS256 secret' },
  'jwks-url': { env: 'TURNCHART_JWKS_URL', help: "the issuer's JWKS URL, for RS256/ES256 bearer JWTs (keys cached, fetched again for an unknown key id)" },
  'jwt-issuer': { env: 'TURNCHART_JWT_ISSUER', help: '`iss` every JWT must carry' },
  'jwt-audience': { env: 'TURNCHART_JWT_AUDIENCE', help: '`aud` every JWT must name' },
  'idle-ttl': { env: 'TURNCHART_IDLE_TTL', help: 'seconds before an unused session is closed (default 300)' },
  'cors-origin': { env: 'TURNCHART_CORS_ORIGIN', help: 'the one origin CORS allows (default: CORS off)' },
  'allowed-hosts': { env: 'TURNCHART_ALLOWED_HOSTS', help: 'comma-separated names the Host header may give besides the bound address and loopback (a proxy\'s public names)' },
  'max-sessions': { env: 'TURNCHART_MAX_SESSIONS', help: 'sessions open at once before requests that open more are refused (default 1000)' },
  'max-streams': { env: 'TURNCHART_MAX_STREAMS', help: 'concurrent event and chat streams before new ones are refused (default 1000)' },
  'max-sessions-per-principal': { env: 'TURNCHART_MAX_SESSIONS_PER_PRINCIPAL', help: 'sessions one principal holds open at once, on any host, before more are refused 429 (default 100; admins: only the host limit)' },
  'max-running-turns-per-principal': { env: 'TURNCHART_MAX_RUNNING_TURNS_PER_PRINCIPAL', help: "turns of one principal's sessions running or queued at once before more are refused 429 (default 10)" },
  'turns-per-minute-per-principal': { env: 'TURNCHART_TURNS_PER_MINUTE_PER_PRINCIPAL', help: "turns of one principal's sessions started in any 60 s before more are refused 429 (default 60)" },
  'max-streams-per-principal': { env: 'TURNCHART_MAX_STREAMS_PER_PRINCIPAL', help: 'streams one principal holds open at once, on any host, before more are refused 429 (default 20)' },
  'daily-tokens-per-principal': { env: 'TURNCHART_DAILY_TOKENS_PER_PRINCIPAL', help: "input + output tokens one principal's sessions may spend per UTC day; then new turns end budget_exhausted (default: no limit)" },
  'lease-ttl': { env: 'TURNCHART_LEASE_TTL', help: 'seconds a session lease lasts unrenewed (default 30)' },
  'owner-host': { env: 'TURNCHART_OWNER_HOST', help: 'host name this process holds leases under (default: os.hostname())' },
  'stately-inspect': { env: 'TURNCHART_STATELY_INSPECT', help: "ws:// URL to forward inspection events to in @statelyai/inspect's format (default: off)" },
  'amqp-url': { env: 'TURNCHART_AMQP_URL', help: 'RabbitMQ URL: join the cluster of hosts on this broker and this database, and serve the task routes (POST /tasks …)' },
  'route-timeout': { env: 'TURNCHART_ROUTE_TIMEOUT', help: 'seconds a command routed to another host may take (default 15)' },
  'amqp-namespace': { env: 'TURNCHART_AMQP_NAMESPACE', help: 'prefix of the task queue and exchanges (default turnchart)' },
  'command-env': { env: 'TURNCHART_COMMAND_ENV', multiple: true, help: "variables run_command's commands get besides PATH, HOME, LANG, TERM, LC_* (repeatable or comma-separated; never TURNCHART_*, DATABASE_URL)" },
  sandbox: { env: 'TURNCHART_SANDBOX', help: "run_command's sandbox: auto (bubblewrap when it works, else none with a warning), bwrap (or refuse to start) or off (default auto)" },
  'resume-turns': { env: 'TURNCHART_RESUME_TURNS', help: "on: a turn whose host went away goes on when its session is next opened, a shutdown parks running turns; off: they end interrupted / actor_stopped (default on; an agent's resume: false opts it out)" },
  'metrics-port': { env: 'TURNCHART_METRICS_PORT', help: 'also serve GET /metrics (Prometheus) on this port, without a token, for a scraper on a private network (default: none; GET /metrics on the API port needs the token either way)' },
  'metrics-host': { env: 'TURNCHART_METRICS_HOST', help: "interface of the --metrics-port listener (default: --host's)" },
  ...LOG_FLAGS,
  ...OTEL_FLAGS,
} as const;

type Flag = keyof typeof FLAGS;

/** Flags whose values are secrets: kept out of the process's command line once read (`hideSecretArguments`). */
export const SECRET_FLAGS: readonly Flag[] = ['token', 'jwt-secret', 'database-url', 'amqp-url'];

/** Secrets that may come from a file instead, and the flag of that file. */
const SECRET_FILES = { token: 'token-file', 'jwt-secret': 'jwt-secret-file', 'database-url': 'database-url-file' } as const satisfies Partial<Record<Flag, Flag>>;

const settingsSchema = z.object({
  config: z.string().optional(),
  host: z.string().min(1).default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65_535).default(4477),
  db: z.string().min(1).optional(),
  'database-url': z.string().min(1).optional(),
  'mirror-sqlite': z.string().min(1).optional(),
  workspace: z.string().min(1).default('.'),
  model: z.string().optional(),
  'context-window': z.coerce.number().int().min(1_000).max(100_000_000).optional(),
  'max-output-tokens': z.coerce.number().int().min(1).max(10_000_000).optional(),
  'max-reasoning-tokens': z.coerce.number().int().min(0).max(10_000_000).optional(),
  'model-retries': z.coerce.number().int().min(0).max(20).optional(),
  'stall-timeout': z.coerce.number().min(0).max(3_600).optional(),
  'provider-name': z.string().min(1).max(100).optional(),
  /** Environment only: a secret has no business in a process's argument list. */
  apiKey: z.string().min(1).optional(),
  'permission-mode': permissionModeSchema.default('ask'),
  token: z.string().min(1).optional(),
  'jwt-secret': z.string().min(32, 'an HS256 secret of at least 32 bytes').optional(),
  'jwks-url': z.url({ protocol: /^https?$/ }).optional(),
  'jwt-issuer': z.string().min(1).max(2_000).optional(),
  'jwt-audience': z.string().min(1).max(2_000).optional(),
  'idle-ttl': z.coerce.number().int().min(0).max(2_000_000).default(300),
  'cors-origin': z.string().min(1).optional(),
  'allowed-hosts': z
    .string()
    .transform((list) => list.split(',').filter((host) => host.trim() !== ''))
    .pipe(z.array(allowedHostSchema))
    .default([]),
  'max-sessions': z.coerce.number().int().min(1).max(10_000_000).optional(),
  'max-streams': z.coerce.number().int().min(1).max(10_000_000).optional(),
  'max-sessions-per-principal': z.coerce.number().int().min(1).max(10_000_000).optional(),
  'max-running-turns-per-principal': z.coerce.number().int().min(1).max(10_000_000).optional(),
  'turns-per-minute-per-principal': z.coerce.number().int().min(1).max(10_000_000).optional(),
  'max-streams-per-principal': z.coerce.number().int().min(1).max(10_000_000).optional(),
  'daily-tokens-per-principal': z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  'lease-ttl': z.coerce.number().min(0.1).max(86_400).default(30),
  'owner-host': z.string().min(1).max(255).optional(),
  'stately-inspect': z
    .string()
    .regex(/^wss?:\/\/[^\s]+$/, 'a ws:// or wss:// URL')
    .optional(),
  'amqp-url': z.string().regex(/^amqps?:\/\//, 'an amqp:// or amqps:// URL').optional(),
  'route-timeout': z.coerce.number().min(0.1).max(3_600).optional(),
  'amqp-namespace': z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/).optional(),
  'command-env': commandEnvFlagSchema.default([]),
  sandbox: sandboxChoiceSchema.default('auto'),
  'resume-turns': z.enum(['on', 'off']).default('on'),
  'metrics-port': z.coerce.number().int().min(0).max(65_535).optional(),
  'metrics-host': z.string().min(1).max(255).optional(),
  ...logSettingsSchema,
  ...otelSettingsSchema,
});

export type ServeSettings = z.infer<typeof settingsSchema> & {
  /** `--model` or `TURNCHART_MODEL` was given: it overrides the configuration file's default model. */
  modelFromFlags: boolean;
};

export function serveUsage(): string {
  const lines = Object.entries(FLAGS).map(([name, { env, help }]) => `  --${name.padEnd(31)} ${help} [${env}]`);
  return ['Usage: turnchart serve [options]', '', ...lines].join('\n');
}

/** Flags over environment variables over the configuration file, validated; throws a message fit for the terminal. */
export function serveSettings(args: string[], env: NodeJS.ProcessEnv, file: LoadedConfig | null = null): ServeSettings {
  const layers = layeredValues(args, env, FLAGS, file);
  const merged = layers.values;
  const source = (name: string) => (name === 'apiKey' ? 'TURNCHART_API_KEY' : layers.sourceOf(name));
  merged.apiKey = env.TURNCHART_API_KEY || undefined;
  for (const [name, fileFlag] of Object.entries(SECRET_FILES)) {
    const secretFile = merged[fileFlag];
    if (secretFile === undefined) continue;
    if (merged[name] !== undefined) throw new Error(`${source(name)} and ${source(fileFlag)} are both set; give one`);
    merged[name] = readSecretFile(secretFile, source(fileFlag));
  }
  const parsed = settingsSchema.safeParse(merged);
  if (!parsed.success) throw new Error(settingsProblem(parsed.error, source));
  if (parsed.data['jwt-secret'] !== undefined && parsed.data['jwks-url'] !== undefined) throw new Error(`${source('jwt-secret')} and ${source('jwks-url')} are both set; give one`);
  const otelProblem = otelSettingsProblem(parsed.data, source);
  if (otelProblem) throw new Error(otelProblem);
  return { ...parsed.data, modelFromFlags: layers.origin('model') !== 'file' && parsed.data.model !== undefined };
}

/**
 * The host's log (issue 27), masking every secret the settings hold wherever it would appear; a line
 * about a turn carries its trace id when `traceIdOf` (the host's OpenTelemetry exporter) knows it.
 */
export function serveLogger(settings: ServeSettings, traceIdOf?: TraceIdOf): Logger {
  return loggerOf(settings, 'turnchart', [settings.token, settings['jwt-secret'], settings['database-url'], settings['amqp-url'], settings.apiKey], traceIdOf);
}

/**
 * Starts the host from settings and the configuration file, and reports to the log. What the
 * file names is checked first: a mistake in it stops the start before anything is opened.
 */
export async function serve(settings: ServeSettings, log: Logger, file: LoadedConfig | null = null): Promise<RunningHost> {
  const provider = providerSettings(settings);
  const configured: ResolvedConfig | null = file
    ? await resolveConfig(file, { modelOverride: settings.modelFromFlags ? settings.model : undefined, provider })
    : null;
  const choice = configured?.model ?? (await modelFromSpec(settings.model, provider));
  if (file) {
    log.info(`config: ${file.name}; agents: ${Object.keys(configured!.agents).join(', ') || '(none of its own)'}`);
    for (const key of secretsWrittenIn(file)) log.warn(`${file.name} holds ${key} as written text: keep the file out of version control, or read it from the environment (process.env) or a file (tokenFile, databaseUrlFile)`);
  }
  log.info(`model: ${choice.description}`);
  log.info(`storage: ${settings['database-url'] ? 'PostgreSQL' : `SQLite ${settings.db ?? '.turnchart/turnchart.db'}`}; workspace: ${settings.workspace}`);
  if (settings['mirror-sqlite']) log.info(`history mirror: SQLite ${settings['mirror-sqlite']}`);
  log.info(`auth: ${authDescription(settings)}`);
  if (settings['amqp-url']) log.info(`cluster: RabbitMQ ${settings['amqp-url'].replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')}`);
  if (settings.otel) log.info(`otel: traces exported over OTLP as the OTEL_* variables say${settings['otel-content'] ? ', with message contents' : ''}`);
  // Issue 27: the SDK (with --otel) starts before the host and is shut down, its last spans exported, after it closes.
  return withOtel(settings, 'turnchart', () => startHost({
    host: settings.host,
    port: settings.port,
    ...(settings.db && { db: settings.db }),
    ...(settings['database-url'] && { databaseUrl: settings['database-url'] }),
    ...(settings['mirror-sqlite'] && { mirrorSqlite: settings['mirror-sqlite'] }),
    workspace: settings.workspace,
    model: choice.model,
    modelDescription: choice.description,
    ...(configured && { agentNotes: configured.notes }),
    ...(configured?.mcpServers && { mcpServers: configured.mcpServers }),
    permissionMode: settings['permission-mode'],
    token: settings.token ?? null,
    jwt: jwtSettingsOf(settings),
    idleTtlSeconds: settings['idle-ttl'],
    corsOrigin: settings['cors-origin'] ?? null,
    allowedHosts: settings['allowed-hosts'],
    ...(settings['max-sessions'] !== undefined && { maxSessions: settings['max-sessions'] }),
    ...(settings['max-streams'] !== undefined && { maxStreams: settings['max-streams'] }),
    ...(settings['max-sessions-per-principal'] !== undefined && { maxSessionsPerPrincipal: settings['max-sessions-per-principal'] }),
    ...(settings['max-running-turns-per-principal'] !== undefined && { maxRunningTurnsPerPrincipal: settings['max-running-turns-per-principal'] }),
    ...(settings['turns-per-minute-per-principal'] !== undefined && { turnsPerMinutePerPrincipal: settings['turns-per-minute-per-principal'] }),
    ...(settings['max-streams-per-principal'] !== undefined && { maxStreamsPerPrincipal: settings['max-streams-per-principal'] }),
    ...(settings['daily-tokens-per-principal'] !== undefined && { dailyTokensPerPrincipal: settings['daily-tokens-per-principal'] }),
    cluster: settings['amqp-url']
      ? clusterOf({ amqpUrl: settings['amqp-url'], ...(settings['route-timeout'] !== undefined && { routeTimeoutMs: Math.round(settings['route-timeout'] * 1000) }) })
      : null,
    ...(settings['amqp-url'] && { amqpUrl: settings['amqp-url'] }),
    ...(settings['amqp-namespace'] && { amqpNamespace: settings['amqp-namespace'] }),
    runtime: {
      ownership: { leaseTtlMs: Math.round(settings['lease-ttl'] * 1000), ...(settings['owner-host'] && { host: settings['owner-host'] }) },
      ...(settings['resume-turns'] === 'off' && { resumeTurns: false }),
      ...(configured && runtimeOptionsOf(configured)),
    },
    warn: warnTo(log),
    ...(settings['stately-inspect'] && { statelyInspect: settings['stately-inspect'] }),
    ...(settings['command-env'].length > 0 && { commandEnv: settings['command-env'] }),
    sandbox: settings.sandbox,
    ...(settings['metrics-port'] !== undefined && { metricsPort: settings['metrics-port'], ...(settings['metrics-host'] && { metricsHost: settings['metrics-host'] }) }),
    ...(settings.otel && { otel: { recordContent: settings['otel-content'] } }),
  }));
}

/** Who may call the host, as the start says it (never a secret). */
function authDescription(settings: ServeSettings): string {
  const jwt = settings['jwt-secret'] !== undefined ? 'HS256 JWTs' : settings['jwks-url'] !== undefined ? `JWTs signed by the keys at ${settings['jwks-url']}` : null;
  const shared = settings.token !== undefined ? 'the shared token (an operator who sees every session)' : null;
  if (jwt) return `${jwt}, each user sees their own sessions${shared ? `; and ${shared}` : ''}`;
  return shared ?? 'none (loopback only: whoever reaches the port is the operator)';
}

/** Signed identities, when a key is set: `--jwt-secret` or `--jwks-url`, with the claims every token must carry. */
function jwtSettingsOf(settings: ServeSettings): JwtSettings | null {
  const keys = settings['jwt-secret'] !== undefined ? { secret: settings['jwt-secret'] } : settings['jwks-url'] !== undefined ? { jwksUrl: settings['jwks-url'] } : null;
  if (!keys) return null;
  return { keys, ...(settings['jwt-issuer'] && { issuer: settings['jwt-issuer'] }), ...(settings['jwt-audience'] && { audience: settings['jwt-audience'] }) };
}

/** What the configuration file gives the runtime: its agents, their `defineTool` tools, the host-wide rules and skills. */
export function runtimeOptionsOf(configured: ResolvedConfig) {
  return {
    agents: configured.agents,
    ...(configured.tools.length > 0 && { tools: configured.tools }),
    ...(configured.permissions && { permissions: configured.permissions }),
    ...(configured.skills && { skills: configured.skills }),
  };
}

/** The model flags as provider settings: only those given, so the adapter's defaults hold for the rest. */
export function providerSettings(settings: Pick<ServeSettings, 'apiKey' | 'context-window' | 'max-output-tokens' | 'max-reasoning-tokens' | 'model-retries' | 'stall-timeout' | 'provider-name'>): ProviderSettings {
  const capabilities = {
    ...(settings['context-window'] !== undefined && { contextWindow: settings['context-window'] }),
    ...(settings['max-output-tokens'] !== undefined && { maxOutputTokens: settings['max-output-tokens'] }),
    ...(settings['max-reasoning-tokens'] !== undefined && { maxReasoningTokens: settings['max-reasoning-tokens'] }),
  };
  return {
    ...(settings.apiKey && { apiKey: settings.apiKey }),
    ...(Object.keys(capabilities).length > 0 && { capabilities }),
    ...(settings['model-retries'] !== undefined && { maxRetries: settings['model-retries'] }),
    ...(settings['stall-timeout'] !== undefined && { stallTimeoutMs: Math.round(settings['stall-timeout'] * 1000) }),
    ...(settings['provider-name'] && { providerName: settings['provider-name'] }),
  };
}
