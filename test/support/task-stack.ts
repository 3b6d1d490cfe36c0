import { randomUUID } from 'node:crypto';
import { connect } from 'amqplib';
import { postgresStorage, postgresTaskStorage } from '../../storage/postgres.js';
import type { TaskStorage } from '../../storage/task-storage.js';
import {
  AmqpLink,
  createTaskEventConsumer,
  startWorker,
  storageFetcher,
  storagePositions,
  taskTopology,
  type ModelPort,
  type TaskEventConsumer,
  type TaskEventConsumerOptions,
  type TaskEventEnvelope,
  type TaskWorker,
  type WorkerOptions,
} from '../../src/index.js';
import { dropPostgresSchema } from './databases.js';
import { testHost, type TestHost } from './host.js';

export const AMQP_URL = process.env.TEST_AMQP_URL;
export const PG_URL = process.env.TEST_DATABASE_URL;
/** Why a task suite cannot run here, or null. */
export const TASK_SUITE_SKIP = !AMQP_URL ? 'no RabbitMQ (TEST_AMQP_URL)' : !PG_URL ? 'no PostgreSQL (TEST_DATABASE_URL)' : null;

/**
 * The parts of a task deployment on the machine's PostgreSQL (a schema of its own) and RabbitMQ
 * (a namespace of its own): hosts, workers and consumers as a test wants them, all closed and
 * removed by `close()`.
 */
export class TaskStack {
  readonly schema = `tc_tasks_${randomUUID().replaceAll('-', '')}`;
  readonly namespace = `tc-test-${randomUUID()}`;
  readonly databaseUrl = `${PG_URL}?schema=${this.schema}`;
  private readonly closers: Array<() => Promise<unknown>> = [];
  private readonly consumerQueues: string[] = [];
  readonly tasks: TaskStorage = postgresTaskStorage({ connectionString: PG_URL!, schema: this.schema });

  async ready(): Promise<this> {
    await this.tasks.migrate();
    return this;
  }

  /** A host serving the task routes (its own pools). */
  async host(model: ModelPort): Promise<TestHost> {
    const db = { name: 'postgres', open: () => postgresStorage({ connectionString: PG_URL!, schema: this.schema }), drop: async () => undefined };
    const host = await testHost(db, model, { amqpUrl: AMQP_URL!, amqpNamespace: this.namespace, taskStorage: postgresTaskStorage({ connectionString: PG_URL!, schema: this.schema }) });
    this.closers.push(() => host.close());
    return host;
  }

  /** An in-process worker (its own pools and connection). */
  async worker(options: Omit<WorkerOptions, 'sessions' | 'tasks' | 'amqpUrl'>): Promise<TaskWorker> {
    const worker = await startWorker({
      sessions: postgresStorage({ connectionString: PG_URL!, schema: this.schema }),
      tasks: postgresTaskStorage({ connectionString: PG_URL!, schema: this.schema }),
      amqpUrl: AMQP_URL!,
      namespace: this.namespace,
      warn: () => undefined,
      ...options,
    });
    this.closers.push(() => worker.close());
    return worker;
  }

  /** A consumer that records every event it handles, positions kept in the task storage under `name`. */
  async consumer(name: string, extra: Partial<TaskEventConsumerOptions> = {}): Promise<RecordingConsumer> {
    const events: TaskEventEnvelope[] = [];
    const gaps: unknown[] = [];
    const duplicates: TaskEventEnvelope[] = [];
    const queue = `${this.namespace}.consumer.${name}`;
    this.consumerQueues.push(queue);
    const consumer = await createTaskEventConsumer({
      amqpUrl: AMQP_URL!,
      namespace: this.namespace,
      queue,
      positions: storagePositions(this.tasks, name),
      fetchRange: storageFetcher(this.tasks),
      handle: (event) => void events.push(event),
      onGap: (gap) => gaps.push(gap),
      onDuplicate: (event) => duplicates.push(event),
      warn: () => undefined,
      ...extra,
    });
    this.closers.push(() => consumer.close());
    return Object.assign(consumer, { events, gaps, duplicates });
  }

  /** A link for publishing by hand. */
  async link(): Promise<AmqpLink> {
    const link = await AmqpLink.open({ url: AMQP_URL!, name: 'test', warn: () => undefined });
    this.closers.push(() => link.close());
    return link;
  }

  async close(): Promise<void> {
    for (const close of this.closers.splice(0).reverse()) await close().catch(() => undefined);
    await this.tasks.close().catch(() => undefined);
    await removeNamespace(this.namespace, this.consumerQueues).catch(() => undefined);
    await dropPostgresSchema(PG_URL!, this.schema);
  }
}

export type RecordingConsumer = TaskEventConsumer & { events: TaskEventEnvelope[]; gaps: unknown[]; duplicates: TaskEventEnvelope[] };

/** Deletes a namespace's queue and exchanges, and the given consumer queues, from the broker. */
export async function removeNamespace(namespace: string, consumerQueues: string[] = []): Promise<void> {
  const topology = taskTopology(namespace);
  const connection = await connect(AMQP_URL!);
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    await channel.deleteQueue(topology.queue);
    await channel.deleteExchange(topology.eventsExchange);
    await channel.deleteExchange(topology.controlExchange);
    for (const name of consumerQueues) await channel.deleteQueue(name);
  } finally {
    await connection.close();
  }
}
