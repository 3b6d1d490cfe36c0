import { z } from '@hono/zod-openapi';
import { idSchema, triggerTypeSchema } from '../protocol/commands.js';
import { runStatusSchema } from '../protocol/run-status.js';

/** Issue 30: the shapes of the run resource's routes (`/sessions/{sessionId}/runs`, `/runs/{runId}`, its events). */

export const RunParams = z.object({ runId: idSchema });

export const RunSchema = z
  .object({
    runId: z.string(),
    sessionId: z.string(),
    turnId: z.string(),
    status: runStatusSchema.openapi({ description: '`waiting_tool` while its tool calls run or wait for approval' }),
    triggerType: triggerTypeSchema,
    errorCode: z.string().optional().openapi({ description: 'why a failed run failed (`interrupted`: its host went away and it did not go on)' }),
    startedAtMs: z.number().int().openapi({ description: 'when it started, or when it was queued while it waits' }),
    endedAtMs: z.number().int().optional(),
  })
  .openapi('Run');

export const RunList = z.object({ runs: z.array(RunSchema), nextCursor: z.string().nullable() }).openapi('RunList');
