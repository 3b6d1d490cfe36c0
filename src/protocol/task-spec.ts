import { z } from 'zod';
import { idSchema, permissionModeSchema } from './commands.js';

/** What a submitter asks for: one agent session that runs one turn per prompt, in order. */
export const DEFAULT_MAX_DURATION_MS = 3_600_000;
/** The longest a timer can wait (2^31 − 1 ms, about 24.8 days). */
export const MAX_DURATION_LIMIT_MS = 2_147_483_647;

export const taskSpecSchema = z
  .object({
    /** The task's id, chosen by the submitter: submitting the same id again is the same task. */
    taskId: idSchema,
    prompts: z.array(z.string().min(1).max(1_000_000)).min(1).max(100),
    agent: idSchema.default('default'),
    /** No one answers approvals for an unattended task: `auto` by default (`ask` would hold the turn until aborted or timed out). */
    permissionMode: permissionModeSchema.default('auto'),
    /** LC-4: past this the task fails with reason `timeout`; paused time counts. */
    maxDurationMs: z.number().int().min(1).max(MAX_DURATION_LIMIT_MS).default(DEFAULT_MAX_DURATION_MS),
    /** The submitter's own labels, given back in `session_created`. */
    metadata: z.record(z.string().max(200), z.string().max(10_000)).default({}),
  })
  .strict();

export type TaskSpec = z.output<typeof taskSpecSchema>;
export type TaskSubmission = z.input<typeof taskSpecSchema>;
