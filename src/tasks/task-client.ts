import { z } from 'zod';
import { COMMAND_TARGET, isTaskTransition, type TaskReply } from '../../machines/task.machine.js';
import type { TaskControl, TaskRow, TaskStorage } from '../../storage/task-storage.js';
import { TurnchartError } from '../protocol/errors.js';
import type { AmqpLink } from '../transport/amqp-link.js';
import { taskSpecSchema } from '../protocol/task-spec.js';
import { controlRoutingKey, declareTaskTopology, taskTopology, type TaskMessage, type TaskTopology } from './task-topology.js';

/** What submitting and controlling tasks needs: their storage and a link to RabbitMQ. */
export interface TaskClient {
  tasks: TaskStorage;
  link: AmqpLink;
  /** The broker names' namespace (`turnchart` by default). */
  namespace?: string;
  now?: () => number;
}

/** Declares the queue and exchanges once per link (a host or CLI may submit before any worker ran). */
const declared = new WeakMap<AmqpLink, Set<string>>();

async function ready(client: TaskClient): Promise<TaskTopology> {
  const topology = taskTopology(client.namespace);
  const done = declared.get(client.link) ?? new Set<string>();
  declared.set(client.link, done);
  if (!done.has(topology.namespace)) {
    done.add(topology.namespace);
    await client.link.onChannel((channel) => declareTaskTopology(channel, topology));
  }
  return topology;
}

/**
 * Submits a task: stores it PENDING, then queues its id for a worker (with the broker's confirm).
 * Idempotent by task id: a task already stored is returned as it is, and queued again only while
 * no worker has claimed it (its first queueing may have been lost). `traceParent` (issue 27, W3C) goes
 * with the message: the worker's turns of the task are spans of the submitter's trace.
 */
export async function submitTask(client: TaskClient, submission: unknown, principal?: string, traceParent?: string): Promise<{ created: boolean; task: TaskRow }> {
  const parsed = taskSpecSchema.safeParse(submission);
  if (!parsed.success) throw new TurnchartError('InvalidInput', z.prettifyError(parsed.error));
  const spec = parsed.data;
  const stored = await client.tasks.createTask(spec.taskId, spec, (client.now ?? Date.now)(), principal);
  // A submission of someone else's task id never queues their task again (issue 25); the route refuses it.
  const theirs = !stored.created && principal !== undefined && stored.task.principal !== principal;
  if (!theirs && (stored.created || (stored.task.state === 'PENDING' && stored.task.agentSessionId === null))) {
    const topology = await ready(client);
    await client.link.publish('', topology.queue, { taskId: spec.taskId, ...(traceParent && { traceParent }) } satisfies TaskMessage);
  }
  return stored;
}

export type ControlResult = { ok: true; task: TaskRow } | Extract<TaskReply, { ok: false }> | { ok: false; error: { code: 'UnknownTask'; message: string } };

/**
 * Asks the task's worker, wherever it runs, to pause, resume or abort it: the request is recorded on
 * the task row first, then a notice goes to `task.control.<taskId>`. The worker applies what the row
 * says — on the notice, or at its next checkpoint if the notice was lost. A request LC-1 does not
 * allow from the task's stored state is refused here; the worker's chart has the final word.
 */
export async function requestTaskControl(client: TaskClient, taskId: string, control: TaskControl): Promise<ControlResult> {
  const task = await client.tasks.getTask(taskId);
  if (!task) return { ok: false, error: { code: 'UnknownTask', message: `no task '${taskId}'` } };
  const to = COMMAND_TARGET[control];
  // Resuming a task whose pause has not taken effect yet withdraws the pause.
  const withdraws = control === 'resume' && task.state === 'RUNNING' && task.control === 'pause';
  if (!withdraws && !isTaskTransition(task.state, to)) return { ok: false, error: { code: 'InvalidTransition', from: task.state, to } };
  const recorded = await client.tasks.requestControl(taskId, control, (client.now ?? Date.now)());
  const topology = await ready(client);
  await client.link.publish(topology.controlExchange, controlRoutingKey(taskId), { taskId } satisfies TaskMessage);
  return { ok: true, task: recorded ?? task };
}
