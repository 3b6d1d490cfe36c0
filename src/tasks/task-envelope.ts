import { z } from 'zod';
import type { TaskEventRow } from '../../storage/task-storage.js';

/** The protocol version of seed 002's envelope. */
export const HCP_VERSION = '1.0';

/** The nine standard event types of LC-2. */
export const TASK_EVENT_TYPES = [
  'session_created',
  'state_changed',
  'progress',
  'intermediate_result',
  'log',
  'warning',
  'error',
  'checkpoint_created',
  'session_closed',
] as const;

export type TaskEventType = (typeof TASK_EVENT_TYPES)[number];

/**
 * LC-2's envelope. In the protocol's terms the task is the session: `session_id` is the task id
 * (the agent session the task runs in is `data.agent_session_id` of `session_created`).
 */
export const taskEventEnvelopeSchema = z.object({
  hcp_version: z.literal(HCP_VERSION),
  message_id: z.string().min(1).max(200),
  timestamp: z.string().datetime(),
  session_id: z.string().min(1).max(200),
  type: z.literal('event'),
  payload: z.object({
    event_type: z.enum(TASK_EVENT_TYPES),
    sequence: z.number().int().min(1),
    data: z.record(z.string(), z.unknown()),
  }),
});

export type TaskEventEnvelope = z.infer<typeof taskEventEnvelopeSchema>;

/** A stored event as it travels. */
export function toEnvelope(row: TaskEventRow): TaskEventEnvelope {
  return {
    hcp_version: HCP_VERSION,
    message_id: row.messageId,
    timestamp: new Date(row.createdAtMs).toISOString(),
    session_id: row.taskId,
    type: 'event',
    payload: { event_type: row.eventType as TaskEventType, sequence: row.sequence, data: row.data },
  };
}
