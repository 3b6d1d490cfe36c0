import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startHost, type RunningHost } from '../host/host.js';
import { permissionModeSchema } from '../protocol/commands.js';
import { modelFromSpec, type ProviderSettings } from '../model/model-spec.js';

/** `turnchart serve`: each flag also read from its environment variable, flags winning. */
const FLAGS = {
  host: { env: 'TURNCHART_HOST', help: 'interface to bind (default 127.0.0.1; anything else needs --token)' },
  port: { env: 'TURNCHART_PORT', help: 'port (default 4477; 0 picks a free one)' },
  db: { env: 'TURNCHART_DB', help: 'SQLite file (default .turnchart/turnchart.db)' },
  'database-url': { env: 'DATABASE_URL', help: 'PostgreSQL URL (instead of SQLite)' },
  workspace: { env: 'TURNCHART_WORKSPACE', help: 'directory the sessions work in (default: the current directory)' },
  model: { env: 'TURNCHART_MODEL', help: 'openai-compatible:BASE_URL#MODEL or scripted:FILE (default: the demo model); API key from TURNCHART_API_KEY' },
  'context-window': { env: 'TURNCHART_CONTEXT_WINDOW', help: "the model's context window in tokens (default 128000)" },
  'max-output-tokens': { env: 'TURNCHART_MAX_OUTPUT_TOKENS', help: 'output tokens asked for per model call (default 8192)' },
  'max-reasoning-tokens': { env: 'TURNCHART_MAX_REASONING_TOKENS', help: 'reasoning tokens kept free of the window (default 0)' },
  'model-retries': { env: 'TURNCHART_MODEL_RETRIES', help: 'retries of a rate-limited or transiently failed model call (default 2)' },
  'stall-timeout': { env: 'TURNCHART_STALL_TIMEOUT', help: 'seconds without a stream part before a model call fails (default 180; 0: never)' },
  'provider-name': { env: 'TURNCHART_PROVIDER_NAME', help: "provider metadata key (default openai-compatible; 'google' for Gemini's endpoint)" },
  'permission-mode': { env: 'TURNCHART_PERMISSION_MODE', help: 'mode of sessions created without one: ask, auto or read_only (default ask)' },
  token: { env: 'TURNCHART_TOKEN', help: 'bearer token every route but /healthz requires' },
  'idle-ttl': { env: 'TURNCHART_IDLE_TTL', help: 'seconds before an unused session is closed (default 300)' },
  'cors-origin': { env: 'TURNCHART_CORS_ORIGIN', help: 'the one origin CORS allows (default: CORS off)' },
  'lease-ttl': { env: 'TURNCHART_LEASE_TTL', help: 'seconds a session lease lasts unrenewed (default 30)' },
  'owner-host': { env: 'TURNCHART_OWNER_HOST', help: 'host name this process holds leases under (default: os.hostname())' },
  'stately-inspect': { env: 'TURNCHART_STATELY_INSPECT', help: "ws:// URL to forward inspection events to in @statelyai/inspect's format (default: off)" },
  'amqp-url': { env: 'TURNCHART_AMQP_URL', help: 'RabbitMQ URL: join the cluster of hosts on this broker and this database, and serve the task routes (POST /tasks …)' },
  'route-timeout': { env: 'TURNCHART_ROUTE_TIMEOUT', help: 'seconds a command routed to another host may take (default 15)' },
  'amqp-namespace': { env: 'TURNCHART_AMQP_NAMESPACE', help: 'prefix of the task queue and exchanges (default turnchart)' },
} as const;

type Flag = keyof typeof FLAGS;

const settingsSchema = z.object({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65_535).default(4477),
  db: z.string().min(1).optional(),
  'database-url': z.string().min(1).optional(),
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
  'idle-ttl': z.coerce.number().int().min(0).max(2_000_000).default(300),
  'cors-origin': z.string().min(1).optional(),
  'lease-ttl': z.coerce.number().min(0.1).max(86_400).default(30),
  'owner-host': z.string().min(1).max(255).optional(),
  'stately-inspect': z
    .string()
    .regex(/^wss?:\/\/[^\s]+$/, 'a ws:// or wss:// URL')
    .optional(),
  'amqp-url': z.string().regex(/^amqps?:\/\//, 'an amqp:// or amqps:// URL').optional(),
  'route-timeout': z.coerce.number().min(0.1).max(3_600).optional(),
  'amqp-namespace': z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/).optional(),
});

export type ServeSettings = z.infer<typeof settingsSchema>;

export function serveUsage(): string {
  const lines = Object.entries(FLAGS).map(([name, { env, help }]) => `  --${name.padEnd(21)} ${help} [${env}]`);
  return ['Usage: turnchart serve [options]', '', ...lines].join('\n');
}

/** Flags over environment variables, validated; throws a message fit for the terminal. */
export function serveSettings(args: string[], env: NodeJS.ProcessEnv): ServeSettings {
  const options = Object.fromEntries(Object.keys(FLAGS).map((name) => [name, { type: 'string' as const }]));
  const { values } = parseArgs({ args, options, strict: true, allowPositionals: false });
  const merged: Record<string, string | undefined> = {};
  for (const name of Object.keys(FLAGS) as Flag[]) merged[name] = (values[name] as string | undefined) ?? env[FLAGS[name].env] ?? undefined;
  merged.apiKey = env.TURNCHART_API_KEY || undefined;
  const parsed = settingsSchema.safeParse(merged);
  if (!parsed.success) throw new Error(z.prettifyError(parsed.error));
  return parsed.data;
}

/** Starts the host from settings and reports on the terminal. */
export async function serve(settings: ServeSettings, log: (line: string) => void): Promise<RunningHost> {
  const choice = await modelFromSpec(settings.model, providerSettings(settings));
  log(`turnchart: model: ${choice.description}`);
  log(`turnchart: storage: ${settings['database-url'] ? 'PostgreSQL' : `SQLite ${settings.db ?? '.turnchart/turnchart.db'}`}; workspace: ${settings.workspace}`);
  if (settings['amqp-url']) log(`turnchart: cluster: RabbitMQ ${settings['amqp-url'].replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')}`);
  return startHost({
    host: settings.host,
    port: settings.port,
    ...(settings.db && { db: settings.db }),
    ...(settings['database-url'] && { databaseUrl: settings['database-url'] }),
    workspace: settings.workspace,
    model: choice.model,
    permissionMode: settings['permission-mode'],
    token: settings.token ?? null,
    idleTtlSeconds: settings['idle-ttl'],
    corsOrigin: settings['cors-origin'] ?? null,
    cluster: settings['amqp-url']
      ? { amqpUrl: settings['amqp-url'], ...(settings['route-timeout'] !== undefined && { routeTimeoutMs: Math.round(settings['route-timeout'] * 1000) }) }
      : null,
    ...(settings['amqp-url'] && { amqpUrl: settings['amqp-url'] }),
    ...(settings['amqp-namespace'] && { amqpNamespace: settings['amqp-namespace'] }),
    runtime: {
      ownership: { leaseTtlMs: Math.round(settings['lease-ttl'] * 1000), ...(settings['owner-host'] && { host: settings['owner-host'] }) },
    },
    warn: (message) => log(`turnchart: ${message}`),
    ...(settings['stately-inspect'] && { statelyInspect: settings['stately-inspect'] }),
  });
}

/** The model flags as provider settings: only those given, so the adapter's defaults hold for the rest. */
function providerSettings(settings: ServeSettings): ProviderSettings {
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
