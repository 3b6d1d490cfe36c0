import type { ConfirmChannel } from 'amqplib';

/**
 * Where tasks travel on RabbitMQ: one durable queue of submitted tasks (a worker takes a task and
 * acknowledges it once the task's terminal state is durable), a topic exchange of task events
 * routed by session (`task.<taskId>`), and a topic exchange of control notices (`task.control.<taskId>`)
 * that the worker owning a task binds while it runs it. Every name starts with a namespace
 * (`turnchart` unless configured), so deployments — and test runs — can share one broker.
 */
export interface TaskTopology {
  namespace: string;
  queue: string;
  eventsExchange: string;
  controlExchange: string;
}

export const DEFAULT_NAMESPACE = 'turnchart';

export function taskTopology(namespace: string = DEFAULT_NAMESPACE): TaskTopology {
  return { namespace, queue: `${namespace}.tasks`, eventsExchange: `${namespace}.task-events`, controlExchange: `${namespace}.task-control` };
}

/** The routing key of a task session's events; bind `task.*` for every task. */
export function eventRoutingKey(sessionId: string): string {
  return `task.${routingWord(sessionId)}`;
}

export function controlRoutingKey(taskId: string): string {
  return `task.control.${routingWord(taskId)}`;
}

/** A topic routing key's words are split at dots and `*`/`#` are wildcards in bindings: ids keep to the other characters. */
function routingWord(id: string): string {
  return id.replace(/[.*#]/g, '_');
}

/** Declares the durable queue and both exchanges (idempotent). */
export async function declareTaskTopology(channel: ConfirmChannel, topology: TaskTopology): Promise<void> {
  await channel.assertQueue(topology.queue, { durable: true });
  await channel.assertExchange(topology.eventsExchange, 'topic', { durable: true });
  await channel.assertExchange(topology.controlExchange, 'topic', { durable: true });
}

/** What a task's queue message carries: its id (the task itself is in storage), and the submitter's trace context. */
export interface TaskMessage {
  taskId: string;
  /** Issue 27: the W3C traceparent of the submitting request: the task's turns are spans of that trace. */
  traceParent?: string;
}
