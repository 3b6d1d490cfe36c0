import { z } from '@hono/zod-openapi';
import { idSchema, permissionModeSchema } from '../protocol/commands.js';
import { MAX_DURATION_LIMIT_MS } from '../protocol/task-spec.js';
import type { TaskRow } from '../../storage/task-storage.js';

/** The task routes' shapes (the task spec is validated again by `submitTask`, from the same rules). */

const TaskStateSchema = z.enum(['PENDING', 'RUNNING', 'PAUSED', 'ABORTING', 'ABORTED', 'COMPLETED', 'FAILED', 'REJECTED']);

export const SubmitTaskBody = z
  .object({
    taskId: idSchema.describe('chosen by the submitter: the same id again answers with the same task'),
    prompts: z.array(z.string().min(1).max(1_000_000)).min(1).max(100).openapi({ description: 'one turn each, in order' }),
    agent: idSchema.optional(),
    permissionMode: permissionModeSchema.describe('`auto` by default: nobody answers approvals for a task').optional(),
    maxDurationMs: z.number().int().min(1).max(MAX_DURATION_LIMIT_MS).optional().openapi({ description: 'past it the task fails with reason `timeout` (default one hour)' }),
    metadata: z.record(z.string().max(200), z.string().max(10_000)).optional(),
  })
  .strict()
  .openapi('SubmitTask');

export const TaskParams = z.object({ taskId: idSchema });

export const TaskView = z
  .object({
    taskId: z.string(),
    state: TaskStateSchema,
    reason: z.string(),
    riskLevel: z.string().nullable(),
    agentSessionId: z.string().nullable(),
    turnCount: z.number().int(),
    turnsDone: z.number().int(),
    lastCheckpoint: z.string().nullable(),
    control: z.enum(['pause', 'resume', 'abort']).nullable(),
    lastEventSequence: z.number().int(),
    createdAtMs: z.number().int(),
    updatedAtMs: z.number().int(),
    startedAtMs: z.number().int().nullable(),
    finishedAtMs: z.number().int().nullable(),
  })
  .openapi('Task');

export const TaskEventsQuery = z.object({
  after: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  limit: z.coerce.number().int().min(1).max(1_000).default(200),
});

export const TaskEventPage = z
  .object({
    events: z.array(
      z.object({
        hcp_version: z.string(),
        message_id: z.string(),
        timestamp: z.string(),
        session_id: z.string(),
        type: z.literal('event'),
        payload: z.object({ event_type: z.string(), sequence: z.number().int(), data: z.record(z.string(), z.unknown()) }),
      }),
    ),
    nextAfter: z.number().int().nullable(),
  })
  .openapi('TaskEventPage');

export function taskView(task: TaskRow): z.infer<typeof TaskView> {
  return {
    taskId: task.id,
    state: task.state,
    reason: task.reason,
    riskLevel: task.riskLevel,
    agentSessionId: task.agentSessionId,
    turnCount: task.spec.prompts.length,
    turnsDone: task.turnsDone,
    lastCheckpoint: task.lastCheckpoint,
    control: task.control,
    lastEventSequence: task.eventSequence,
    createdAtMs: task.createdAtMs,
    updatedAtMs: task.updatedAtMs,
    startedAtMs: task.startedAtMs,
    finishedAtMs: task.finishedAtMs,
  };
}
