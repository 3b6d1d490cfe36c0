import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { settingsProblem } from './setting-layers.js';
import { submitTask } from '../tasks/task-client.js';
import { taskView } from '../host/task-schemas.js';
import { AmqpLink } from '../transport/amqp-link.js';
import { CONNECTION_FLAGS, mergeFlags, storagesOf, usageOf } from './worker.js';
import { LOG_FLAGS, loggerOf, logSettingsSchema } from './log-settings.js';
import type { Logger } from 'pino';
import { warnTo } from '../host/logger.js';

const FLAGS = {
  ...CONNECTION_FLAGS,
  'task-id': { env: 'TURNCHART_TASK_ID', help: 'the task id (default: a new UUID); submitting an id again is the same task' },
  'max-duration': { env: 'TURNCHART_MAX_DURATION', help: 'seconds before the task fails with reason timeout (default 3600)' },
  agent: { env: 'TURNCHART_AGENT', help: 'the agent to run (default: default)' },
  ...LOG_FLAGS,
} as const;

const settingsSchema = z.object({
  'database-url': z.string().min(1).optional(),
  db: z.string().min(1).optional(),
  'amqp-url': z.string().min(1, 'set --amqp-url or TURNCHART_AMQP_URL'),
  'amqp-namespace': z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/).optional(),
  'task-id': z.string().min(1).optional(),
  'max-duration': z.coerce.number().positive().max(2_147_483).optional(),
  agent: z.string().min(1).optional(),
  prompts: z.array(z.string().min(1)).min(1, 'give at least one prompt (one turn each)'),
  ...logSettingsSchema,
});

export type SubmitSettings = z.infer<typeof settingsSchema>;

export function submitUsage(): string {
  return usageOf('Usage: turnchart submit [options] PROMPT [PROMPT …]   (one turn per prompt; prints the task as JSON)', FLAGS);
}

export function submitSettings(args: string[], env: NodeJS.ProcessEnv): SubmitSettings {
  const { values, positionals, sourceOf } = mergeFlags(args, env, FLAGS, true);
  const parsed = settingsSchema.safeParse({ ...values, prompts: positionals });
  if (!parsed.success) throw new Error(settingsProblem(parsed.error, sourceOf));
  return parsed.data;
}

/** The log of `turnchart submit` (issue 27): stdout is the task alone, anything else said goes here. */
export function submitLogger(settings: SubmitSettings): Logger {
  return loggerOf(settings, 'turnchart submit', [settings['database-url'], settings['amqp-url']]);
}

/** Stores and queues the task; resolves with what to print. */
export async function runSubmit(settings: SubmitSettings, log: Logger): Promise<string> {
  const { sessions, tasks } = storagesOf(settings);
  await sessions.close();
  const link = await AmqpLink.open({ url: settings['amqp-url'], name: `turnchart-submit-${process.pid}`, warn: warnTo(log) });
  try {
    await tasks.migrate();
    const { created, task } = await submitTask(
      { tasks, link, ...(settings['amqp-namespace'] && { namespace: settings['amqp-namespace'] }) },
      {
        taskId: settings['task-id'] ?? randomUUID(),
        prompts: settings.prompts,
        ...(settings.agent && { agent: settings.agent }),
        ...(settings['max-duration'] !== undefined && { maxDurationMs: Math.round(settings['max-duration'] * 1000) }),
      },
    );
    return JSON.stringify({ created, ...taskView(task) });
  } finally {
    await link.close();
    await tasks.close();
  }
}
