import { resolve } from 'node:path';
import { z } from 'zod';
import { postgresStorage, postgresTaskStorage } from '../../storage/postgres.js';
import { sqliteStorage, sqliteTaskStorage } from '../../storage/sqlite.js';
import { modelFromSpec } from '../model/model-spec.js';
import { startWorker, type TaskWorker } from '../tasks/worker.js';
import { sqliteStatePaths, workspaceTools } from '../tools/workspace/index.js';
import { commandEnvFlagSchema } from '../tools/sandbox/command-environment.js';
import { sandboxChoiceSchema } from '../tools/sandbox/command-sandbox.js';
import { McpServers } from '../tools/mcp/index.js';
import { reapLeftoverCommands } from '../tools/sandbox/command-ledger.js';
import type { LoadedConfig } from './config-file.js';
import { resolveConfig } from './config-resolve.js';
import { providerSettings, runtimeOptionsOf } from './serve.js';
import { layeredValues, settingsProblem, type FlagSpec } from './setting-layers.js';
import { TurnchartMetrics } from '../telemetry/metrics.js';
import { countingStorageErrors } from '../telemetry/metrics-storage.js';
import { exposeWorkerMetrics } from '../telemetry/metrics-worker.js';
import { LOG_FLAGS, loggerOf, logSettingsSchema } from './log-settings.js';
import { OTEL_FLAGS, otelSettingsProblem, otelSettingsSchema, withOtel } from './otel-settings.js';
import type { Logger } from 'pino';
import { warnTo } from '../host/logger.js';
import type { Warn } from '../protocol/log-fields.js';

/** `turnchart worker` and `turnchart submit` share how they reach storage and the broker. */
export const CONNECTION_FLAGS = {
  'database-url': { env: 'DATABASE_URL', help: 'PostgreSQL URL (?schema=NAME for a schema of its own)' },
  db: { env: 'TURNCHART_DB', help: 'SQLite file instead (default .turnchart/turnchart.db; one machine only)' },
  'amqp-url': { env: 'TURNCHART_AMQP_URL', help: 'RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672 (required)' },
  'amqp-namespace': { env: 'TURNCHART_AMQP_NAMESPACE', help: 'prefix of the queue and exchanges (default turnchart)' },
} as const;

const FLAGS = {
  config: { env: 'TURNCHART_CONFIG', help: 'configuration file, as for serve (default: ./turnchart.config.ts … when there is one)' },
  ...CONNECTION_FLAGS,
  concurrency: { env: 'TURNCHART_CONCURRENCY', help: 'tasks run at once (default 4)' },
  workspace: { env: 'TURNCHART_WORKSPACE', help: 'directory the tasks work in (default: the current directory)' },
  model: { env: 'TURNCHART_MODEL', help: 'as for serve (default: the demo model); API key from TURNCHART_API_KEY' },
  'lease-ttl': { env: 'TURNCHART_LEASE_TTL', help: "seconds before a dead worker's tasks may be resumed elsewhere (default 10)" },
  'owner-host': { env: 'TURNCHART_OWNER_HOST', help: 'host name this worker holds leases under (default: os.hostname())' },
  'command-env': { env: 'TURNCHART_COMMAND_ENV', help: 'as for serve: variables run_command passes to commands (repeatable or comma-separated)', multiple: true },
  sandbox: { env: 'TURNCHART_SANDBOX', help: "as for serve: run_command's sandbox, auto, bwrap or off (default auto)" },
  'metrics-port': { env: 'TURNCHART_METRICS_PORT', help: 'serve GET /metrics (Prometheus) on this port, without a token (default: none)' },
  'metrics-host': { env: 'TURNCHART_METRICS_HOST', help: 'interface of the --metrics-port listener (default 127.0.0.1)' },
  ...LOG_FLAGS,
  ...OTEL_FLAGS,
} as const;

const connectionSchema = {
  'database-url': z.string().min(1).optional(),
  db: z.string().min(1).optional(),
  'amqp-url': z.string({ error: 'set --amqp-url or TURNCHART_AMQP_URL' }).min(1, 'set --amqp-url or TURNCHART_AMQP_URL'),
  'amqp-namespace': z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/).optional(),
};

const settingsSchema = z.object({
  config: z.string().optional(),
  ...connectionSchema,
  concurrency: z.coerce.number().int().min(1).max(1_000).default(4),
  workspace: z.string().min(1).default('.'),
  model: z.string().optional(),
  apiKey: z.string().min(1).optional(),
  'lease-ttl': z.coerce.number().min(0.1).max(86_400).default(10),
  'owner-host': z.string().min(1).max(255).optional(),
  'command-env': commandEnvFlagSchema.default([]),
  sandbox: sandboxChoiceSchema.default('auto'),
  'metrics-port': z.coerce.number().int().min(0).max(65_535).optional(),
  'metrics-host': z.string().min(1).max(255).default('127.0.0.1'),
  ...logSettingsSchema,
  ...otelSettingsSchema,
});

export type WorkerSettings = z.infer<typeof settingsSchema>;

export function workerUsage(): string {
  return usageOf('Usage: turnchart worker [options]', FLAGS);
}

export function usageOf(head: string, flags: Record<string, { env: string; help: string }>): string {
  const lines = Object.entries(flags).map(([name, { env, help }]) => `  --${name.padEnd(21)} ${help} [${env}]`);
  return [head, '', ...lines].join('\n');
}

/** Flags over environment variables over the configuration file, validated; throws a message fit for the terminal. */
export function workerSettings(args: string[], env: NodeJS.ProcessEnv, file: LoadedConfig | null = null): WorkerSettings & { modelFromFlags: boolean } {
  const layers = layeredValues(args, env, FLAGS, file);
  const merged = layers.values;
  merged.apiKey = env.TURNCHART_API_KEY || undefined;
  const parsed = settingsSchema.safeParse(merged);
  if (!parsed.success) throw new Error(settingsProblem(parsed.error, (name) => (name === 'apiKey' ? 'TURNCHART_API_KEY' : layers.sourceOf(name))));
  const otelProblem = otelSettingsProblem(parsed.data, layers.sourceOf);
  if (otelProblem) throw new Error(otelProblem);
  return { ...parsed.data, modelFromFlags: layers.origin('model') !== 'file' && parsed.data.model !== undefined };
}

/** Each flag from the command line, else from its environment variable (an empty one is unset); a `multiple` flag's values joined with commas. */
export function mergeFlags(args: string[], env: NodeJS.ProcessEnv, flags: Record<string, FlagSpec>, allowPositionals: boolean) {
  return layeredValues(args, env, flags, null, allowPositionals);
}

/** The session and task storage the flags name (PostgreSQL wins over SQLite). */
export function storagesOf(settings: { 'database-url'?: string | undefined; db?: string | undefined }) {
  const url = settings['database-url'];
  if (url) return { sessions: postgresStorage({ connectionString: url }), tasks: postgresTaskStorage({ connectionString: url }), description: 'PostgreSQL' };
  const filename = sqliteFileName(settings);
  return { sessions: sqliteStorage({ filename }), tasks: sqliteTaskStorage({ filename }), description: `SQLite ${filename}` };
}

function sqliteFileName(settings: { db?: string | undefined }): string {
  return settings.db ?? resolve('.turnchart', 'turnchart.db');
}

/** The worker's log (issue 27), masking the secrets its settings hold. */
export function workerLogger(settings: WorkerSettings): Logger {
  return loggerOf(settings, 'turnchart worker', [settings['database-url'], settings['amqp-url'], settings.apiKey]);
}

/** Starts a worker from settings and the configuration file, and reports to the log. */
export async function runWorker(settings: WorkerSettings & { modelFromFlags?: boolean }, log: Logger, file: LoadedConfig | null = null): Promise<TaskWorker> {
  const provider = providerSettings(settings);
  const configured = file ? await resolveConfig(file, { modelOverride: settings.modelFromFlags ? settings.model : undefined, provider }) : null;
  const choice = configured?.model ?? (await modelFromSpec(settings.model, provider));
  const warn: Warn = warnTo(log);
  // Built before storage is opened: a variable that may not reach commands is a startup error.
  const tools = workspaceTools({
    root: resolve(settings.workspace),
    // A SQLite database holds every task's sessions: out of the tools' and the sandbox's reach.
    hiddenPaths: settings['database-url'] ? [] : sqliteStatePaths(sqliteFileName(settings), resolve(settings.workspace)),
    commandEnv: settings['command-env'],
    sandbox: settings.sandbox,
    hostSecrets: [settings['database-url'], settings['amqp-url'], settings.apiKey],
    warn,
  });
  const { sessions: stored, tasks, description } = storagesOf(settings);
  // Issue 27: with --metrics-port, the worker's storage failures are counted as a host's are.
  const metrics = settings['metrics-port'] === undefined ? null : new TurnchartMetrics();
  const sessions = metrics ? countingStorageErrors(stored, metrics) : stored;
  log.info(`model: ${choice.description}; storage: ${description}; concurrency ${settings.concurrency}`);
  // Commands (and MCP servers) a dead worker left running end before its tasks' turns are corrected.
  await reapLeftoverCommands({ warn });
  // Issue 27: the SDK (with --otel) starts before the worker's servers and runtime, and is shut down, its last spans exported, after they close.
  return withOtel(
    settings,
    'turnchart-worker',
    async () => {
      // The file's MCP servers, shared by the worker's sessions as a host shares them.
      const mcp = configured?.mcpServers
        ? await McpServers.start(configured.mcpServers, { warn, secrets: [settings['database-url'], settings['amqp-url'], settings.apiKey], workspace: resolve(settings.workspace) })
        : null;
      const worker = await startWorker({
        sessions,
        tasks,
        amqpUrl: settings['amqp-url'],
        ...(settings['amqp-namespace'] && { namespace: settings['amqp-namespace'] }),
        model: choice.model,
        tools: [...tools, ...(configured?.tools ?? [])],
        workspace: resolve(settings.workspace),
        ...(configured && { agents: configured.agents, runtime: { ...runtimeOptionsOf(configured), ...(mcp && { toolSources: mcp.sources }) } }),
        concurrency: settings.concurrency,
        leaseTtlMs: Math.round(settings['lease-ttl'] * 1000),
        ...(settings['owner-host'] && { ownerHost: settings['owner-host'] }),
        warn,
      }).catch(async (error: unknown) => {
        await mcp?.close();
        throw error;
      });
      if (mcp) {
        // The servers close after the worker's runtime, whose sessions may still be calling them.
        const closeWorker = worker.close.bind(worker);
        worker.close = async () => {
          await closeWorker();
          await mcp.close();
        };
      }
      if (metrics) {
        const listener = await exposeWorkerMetrics(metrics, worker, tasks, settings['metrics-host'], settings['metrics-port']!);
        log.info({ url: listener.url }, `metrics on ${listener.url}`);
      }
      return worker;
    },
    (worker) => worker.runtime,
  );
}
