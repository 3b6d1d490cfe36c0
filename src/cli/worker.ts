import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { postgresStorage, postgresTaskStorage } from '../../storage/postgres.js';
import { sqliteStorage, sqliteTaskStorage } from '../../storage/sqlite.js';
import { modelFromSpec } from '../model/model-spec.js';
import { startWorker, type TaskWorker } from '../tasks/worker.js';
import { workspaceTools } from '../tools/workspace/index.js';
import { commandEnvFlagSchema } from '../tools/sandbox/command-environment.js';
import { reapLeftoverCommands } from '../tools/sandbox/command-ledger.js';

/** `turnchart worker` and `turnchart submit` share how they reach storage and the broker. */
export const CONNECTION_FLAGS = {
  'database-url': { env: 'DATABASE_URL', help: 'PostgreSQL URL (?schema=NAME for a schema of its own)' },
  db: { env: 'TURNCHART_DB', help: 'SQLite file instead (default .turnchart/turnchart.db; one machine only)' },
  'amqp-url': { env: 'TURNCHART_AMQP_URL', help: 'RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672 (required)' },
  'amqp-namespace': { env: 'TURNCHART_AMQP_NAMESPACE', help: 'prefix of the queue and exchanges (default turnchart)' },
} as const;

const FLAGS = {
  ...CONNECTION_FLAGS,
  concurrency: { env: 'TURNCHART_CONCURRENCY', help: 'tasks run at once (default 4)' },
  workspace: { env: 'TURNCHART_WORKSPACE', help: 'directory the tasks work in (default: the current directory)' },
  model: { env: 'TURNCHART_MODEL', help: 'as for serve (default: the demo model); API key from TURNCHART_API_KEY' },
  'lease-ttl': { env: 'TURNCHART_LEASE_TTL', help: "seconds before a dead worker's tasks may be resumed elsewhere (default 10)" },
  'owner-host': { env: 'TURNCHART_OWNER_HOST', help: 'host name this worker holds leases under (default: os.hostname())' },
  'command-env': { env: 'TURNCHART_COMMAND_ENV', help: 'as for serve: variables run_command passes to commands (repeatable or comma-separated)', multiple: true },
} as const;

const connectionSchema = {
  'database-url': z.string().min(1).optional(),
  db: z.string().min(1).optional(),
  'amqp-url': z.string().min(1, 'set --amqp-url or TURNCHART_AMQP_URL'),
  'amqp-namespace': z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/).optional(),
};

const settingsSchema = z.object({
  ...connectionSchema,
  concurrency: z.coerce.number().int().min(1).max(1_000).default(4),
  workspace: z.string().min(1).default('.'),
  model: z.string().optional(),
  apiKey: z.string().min(1).optional(),
  'lease-ttl': z.coerce.number().min(0.1).max(86_400).default(10),
  'owner-host': z.string().min(1).max(255).optional(),
  'command-env': commandEnvFlagSchema.default([]),
});

export type WorkerSettings = z.infer<typeof settingsSchema>;

export function workerUsage(): string {
  return usageOf('Usage: turnchart worker [options]', FLAGS);
}

export function usageOf(head: string, flags: Record<string, { env: string; help: string }>): string {
  const lines = Object.entries(flags).map(([name, { env, help }]) => `  --${name.padEnd(21)} ${help} [${env}]`);
  return [head, '', ...lines].join('\n');
}

/** Flags over environment variables, validated; throws a message fit for the terminal. */
export function workerSettings(args: string[], env: NodeJS.ProcessEnv): WorkerSettings {
  const merged = mergeFlags(args, env, FLAGS, false).values;
  merged.apiKey = env.TURNCHART_API_KEY || undefined;
  const parsed = settingsSchema.safeParse(merged);
  if (!parsed.success) throw new Error(z.prettifyError(parsed.error));
  return parsed.data;
}

/** Each flag from the command line, else from its environment variable; a `multiple` flag's values joined with commas. */
export function mergeFlags(args: string[], env: NodeJS.ProcessEnv, flags: Record<string, { env: string; multiple?: boolean }>, allowPositionals: boolean) {
  const options = Object.fromEntries(Object.keys(flags).map((name) => [name, { type: 'string' as const, multiple: flags[name]!.multiple === true }]));
  const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals });
  const merged: Record<string, string | undefined> = {};
  for (const name of Object.keys(flags)) {
    const given = values[name] as string | string[] | undefined;
    merged[name] = (Array.isArray(given) ? given.join(',') : given) ?? env[flags[name]!.env] ?? undefined;
  }
  return { values: merged, positionals };
}

/** The session and task storage the flags name (PostgreSQL wins over SQLite). */
export function storagesOf(settings: { 'database-url'?: string | undefined; db?: string | undefined }) {
  const url = settings['database-url'];
  if (url) return { sessions: postgresStorage({ connectionString: url }), tasks: postgresTaskStorage({ connectionString: url }), description: 'PostgreSQL' };
  const filename = settings.db ?? resolve('.turnchart', 'turnchart.db');
  return { sessions: sqliteStorage({ filename }), tasks: sqliteTaskStorage({ filename }), description: `SQLite ${filename}` };
}

/** Starts a worker from settings and reports on the terminal. */
export async function runWorker(settings: WorkerSettings, log: (line: string) => void): Promise<TaskWorker> {
  const choice = await modelFromSpec(settings.model, settings.apiKey ? { apiKey: settings.apiKey } : {});
  const warn = (message: string) => log(`turnchart worker: ${message}`);
  // Built before storage is opened: a variable that may not reach commands is a startup error.
  const tools = workspaceTools({
    root: resolve(settings.workspace),
    commandEnv: settings['command-env'],
    hostSecrets: [settings['database-url'], settings['amqp-url'], settings.apiKey],
    warn,
  });
  const { sessions, tasks, description } = storagesOf(settings);
  log(`turnchart worker: model: ${choice.description}; storage: ${description}; concurrency ${settings.concurrency}`);
  // Commands a dead worker left running end before its tasks' turns are corrected.
  await reapLeftoverCommands({ warn });
  return startWorker({
    sessions,
    tasks,
    amqpUrl: settings['amqp-url'],
    ...(settings['amqp-namespace'] && { namespace: settings['amqp-namespace'] }),
    model: choice.model,
    tools,
    concurrency: settings.concurrency,
    leaseTtlMs: Math.round(settings['lease-ttl'] * 1000),
    ...(settings['owner-host'] && { ownerHost: settings['owner-host'] }),
    warn,
  });
}
