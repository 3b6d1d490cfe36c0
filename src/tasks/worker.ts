import { randomUUID } from 'node:crypto';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { z } from 'zod';
import { TERMINAL_TASK_STATES, type TaskOutput } from '../../machines/task.machine.js';
import type { SessionStorage } from '../../storage/session-storage.js';
import { TaskStateConflict, type TaskRow, type TaskStorage } from '../../storage/task-storage.js';
import type { ModelPort } from '../protocol/model.js';
import { TurnchartError } from '../protocol/errors.js';
import type { AgentConfig } from '../runtime/agents.js';
import { createRuntime, type ChartClock, type Runtime, type RuntimeOptions } from '../runtime/runtime.js';
import type { SessionHandle } from '../runtime/session-handle.js';
import type { AnyTool } from '../tools/define-tool.js';
import { userDirectory } from '../tools/workspace/user-directory.js';
import { hasOwnDirectory } from '../protocol/principal.js';
import { AmqpLink } from '../transport/amqp-link.js';
import { DEFAULT_RELAY, OutboxRelay, type OutboxRelayOptions } from './outbox-relay.js';
import { amqpSender, TaskJournal, type EventSender } from './task-journal.js';
import { runningTimeOf } from './running-time.js';
import { approveAll, TaskRunner, type AdmissionGate } from './task-runner.js';
import { controlRoutingKey, declareTaskTopology, taskTopology, type TaskTopology } from './task-topology.js';
import { messageOf } from '../protocol/error-message.js';
import { traceParentSchema } from '../protocol/trace-context.js';
import type { Warn } from '../protocol/log-fields.js';

export interface WorkerOptions {
  sessions: SessionStorage;
  tasks: TaskStorage;
  amqpUrl: string;
  model: ModelPort;
  tools?: AnyTool[];
  /**
   * The workspace `tools` work in (`workspaceTools({ root })`). A task a principal other than the
   * operator submitted works in that principal's directory beneath it (`users/<hash>`), as their
   * sessions on a host do; without it every task works in the tools' root.
   */
  workspace?: string;
  agents?: Record<string, AgentConfig>;
  /** Tasks run at once (the queue's prefetch); default 4. */
  concurrency?: number;
  /** The admission gate (L3); every task is approved at R1 without one. */
  admit?: AdmissionGate;
  /** Session leases: how long a dead worker's tasks wait before another may resume them (a worker on the same host is known dead at once). */
  leaseTtlMs?: number;
  ownerHost?: string;
  abortCleanupMs?: number;
  relay?: Partial<OutboxRelayOptions>;
  /** The charts' clock (a task's max duration); XState's `SimulatedClock` in tests. */
  clock?: ChartClock;
  now?: () => number;
  /** Where non-fatal notes go, with the task (and its session) as fields; default `console.warn`. */
  warn?: Warn;
  /** Shown to RabbitMQ. */
  name?: string;
  /** The broker names' namespace (`turnchart` by default). */
  namespace?: string;
  /** Further runtime options (permission rules, skills), as a configuration file gives them; the options above win. */
  runtime?: Partial<Omit<RuntimeOptions, 'storage' | 'model'>>;
}

export interface TaskWorker {
  readonly runtime: Runtime;
  readonly ownerId: string;
  /** Times its RabbitMQ connection was lost and made again (issue 27: the worker's metrics). */
  readonly brokerReconnects: number;
  /** Ids of the tasks this worker runs now. */
  running(): string[];
  /** The runner of a task this worker runs (for inspection). */
  runner(taskId: string): TaskRunner | undefined;
  /** Publishes events whose publication was never confirmed (the relay also does so on its own). */
  relayOutbox(graceMs?: number): Promise<number>;
  /** Stops taking tasks; running ones are left for another worker to resume (their messages go back to the queue). */
  close(): Promise<void>;
}

interface Delivery {
  message: ConsumeMessage;
  channel: ConfirmChannel;
}

interface Running {
  delivery: Delivery;
  runner: TaskRunner | null;
}

const taskMessageSchema = z.object({
  taskId: z.string().min(1).max(200),
  // Issue 27: a trace context that is not a valid traceparent is dropped, not the task (W3C receivers ignore it).
  traceParent: traceParentSchema.optional().catch(undefined),
});

const DEFAULT_WORKER_LEASE_TTL_MS = 10_000;
const REQUEUE_DELAY_MS = 500;

/**
 * `turnchart worker` as a library: takes task ids from the durable queue (at most `concurrency`
 * unacknowledged), runs each task in its agent session and acknowledges its message only once the
 * task's terminal state is durable. A worker that dies leaves its messages unacknowledged; RabbitMQ
 * delivers them again, and the session's lease decides who resumes: the next worker to hold it
 * starts the task from its last checkpoint.
 */
export async function startWorker(options: WorkerOptions): Promise<TaskWorker> {
  const warn: Warn = options.warn ?? ((message: string) => console.warn(`turnchart worker: ${message}`));
  const now = options.now ?? Date.now;
  const runtime = await createRuntime({
    ...options.runtime,
    storage: options.sessions,
    model: options.model,
    ...(options.tools && { tools: options.tools }),
    ...(options.agents && { agents: options.agents }),
    ...(options.clock && { clock: options.clock }),
    // A task's worker goes on with an interrupted turn itself, from the task's checkpoint, as a new turn.
    resumeTurns: false,
    ownership: { leaseTtlMs: options.leaseTtlMs ?? DEFAULT_WORKER_LEASE_TTL_MS, ...(options.ownerHost && { host: options.ownerHost }) },
    warn,
    now,
  });
  try {
    await options.tasks.migrate();
    const link = await AmqpLink.open({ url: options.amqpUrl, name: options.name ?? `turnchart-worker-${process.pid}`, warn });
    const worker = new Worker(options, runtime, link, warn, now);
    await worker.start();
    return worker;
  } catch (error) {
    await runtime.shutdown();
    throw error;
  }
}

class Worker implements TaskWorker {
  private readonly tasks = new Map<string, Running>();
  private readonly relay: OutboxRelay;
  private readonly controlQueue: string;
  private readonly topology: TaskTopology;
  private readonly send: EventSender;
  private consumerTag: string | null = null;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly options: WorkerOptions,
    readonly runtime: Runtime,
    private readonly link: AmqpLink,
    private readonly warn: Warn,
    private readonly now: () => number,
  ) {
    this.topology = taskTopology(options.namespace);
    this.controlQueue = `${this.topology.controlExchange}.${this.ownerId}`;
    this.send = amqpSender(link, this.topology);
    this.relay = new OutboxRelay(options.tasks, link, this.topology, now, warn, { ...DEFAULT_RELAY, ...options.relay });
  }

  get ownerId(): string {
    return this.runtime.ownership.identity.ownerId;
  }

  get brokerReconnects(): number {
    return this.link.reconnects;
  }

  running(): string[] {
    return [...this.tasks.keys()];
  }

  runner(taskId: string): TaskRunner | undefined {
    return this.tasks.get(taskId)?.runner ?? undefined;
  }

  relayOutbox(graceMs?: number): Promise<number> {
    return this.relay.sweep(graceMs);
  }

  async start(): Promise<void> {
    await this.link.onChannel((channel) => this.setUp(channel));
    this.relay.start();
    void this.relay.sweep();
  }

  /** Declarations, the control queue with the bindings of the tasks run here, and the two consumers; again after a reconnect. */
  private async setUp(channel: ConfirmChannel): Promise<void> {
    await declareTaskTopology(channel, this.topology);
    await channel.assertQueue(this.controlQueue, { exclusive: true, autoDelete: true, durable: false });
    for (const taskId of this.tasks.keys()) await channel.bindQueue(this.controlQueue, this.topology.controlExchange, controlRoutingKey(taskId));
    await channel.consume(this.controlQueue, (message) => message && this.onControl(message), { noAck: true });
    if (this.closing) return;
    await channel.prefetch(this.options.concurrency ?? 4);
    const { consumerTag } = await channel.consume(this.topology.queue, (message) => message && this.onTask({ message, channel }));
    this.consumerTag = consumerTag;
  }

  private onControl(message: ConsumeMessage): void {
    const parsed = parseMessage(message);
    const runner = parsed && this.tasks.get(parsed.taskId)?.runner;
    if (runner) void runner.checkControl().catch((error: unknown) => this.warn(`control of task ${parsed.taskId}: ${messageOf(error)}`, { taskId: parsed.taskId }));
  }

  private onTask(delivery: Delivery): void {
    const parsed = parseMessage(delivery.message);
    if (!parsed) {
      this.warn(`dropped a task message that is not { taskId }: ${delivery.message.content.toString('utf8').slice(0, 200)}`);
      return settle(this.link, delivery, 'ack');
    }
    const known = this.tasks.get(parsed.taskId);
    // Delivered again while it runs here (the channel was replaced): this delivery is the one to acknowledge.
    if (known) return void (known.delivery = delivery);
    this.tasks.set(parsed.taskId, { delivery, runner: null });
    void this.process(parsed.taskId, parsed.traceParent);
  }

  private async process(taskId: string, traceParent: string | undefined): Promise<void> {
    let verdict: 'ack' | 'requeue' = 'requeue';
    try {
      verdict = await this.run(taskId, traceParent);
    } catch (error) {
      if (error instanceof TaskStateConflict) verdict = 'ack';
      else if (!this.closing) this.warn(`task ${taskId}: ${messageOf(error)}; it goes back to the queue`, { taskId });
    } finally {
      const entry = this.tasks.get(taskId);
      this.tasks.delete(taskId);
      await this.link.channel?.unbindQueue(this.controlQueue, this.topology.controlExchange, controlRoutingKey(taskId)).catch(() => undefined);
      // A task sent back after a failure waits a moment: the database may be away, and a redelivery at once would spin.
      if (entry && !this.closing) setTimeout(() => settle(this.link, entry.delivery, verdict), verdict === 'ack' ? 0 : REQUEUE_DELAY_MS).unref();
    }
  }

  /** Runs the task to its terminal state; 'ack' once that is durable (or it was already), 'requeue' when it must run elsewhere. */
  private async run(taskId: string, traceParent: string | undefined): Promise<'ack' | 'requeue'> {
    const handle = await this.acquire(taskId);
    if (!handle) return 'ack';
    try {
      const task = await this.options.tasks.getTask(taskId);
      if (!task) return 'ack';
      if (TERMINAL_TASK_STATES.has(task.state)) {
        await this.closeSession(task, handle);
        return 'ack';
      }
      const journal = new TaskJournal(taskId, this.options.tasks, this.send, { sessionId: handle.id, token: handle.fence }, this.now, this.warn);
      // LC-4: a task taken over goes on with the RUNNING time its events account for (none for a new one).
      const runningMs = task.startedAtMs === null ? 0 : runningTimeOf(await this.options.tasks.listTaskEvents(taskId), this.now());
      const runner = new TaskRunner({
        task,
        runningMs,
        handle,
        sessions: this.options.sessions,
        tasks: this.options.tasks,
        journal,
        admit: this.options.admit ?? approveAll,
        now: this.now,
        newId: randomUUID,
        warn: this.warn,
        ...(traceParent && { traceParent }),
        ...(this.options.abortCleanupMs !== undefined && { abortCleanupMs: this.options.abortCleanupMs }),
        ...(this.options.clock && { clock: this.options.clock }),
      });
      this.tasks.get(taskId)!.runner = runner;
      await this.link.channel?.bindQueue(this.controlQueue, this.topology.controlExchange, controlRoutingKey(taskId));
      runner.start();
      const ended = await Promise.race([runner.done, journal.failed.then((error) => ({ failed: error }))]);
      if (this.closing) return 'requeue';
      if ('failed' in ended) {
        runner.halt();
        throw ended.failed;
      }
      await journal.durable();
      await this.settleTask(taskId, ended);
      return 'ack';
    } finally {
      if (!this.closing) await handle.close();
    }
  }

  /** The terminal state must be stored before the message is acknowledged; a failed write sends the task back to the queue. */
  private async settleTask(taskId: string, output: TaskOutput): Promise<void> {
    const stored = await this.options.tasks.getTask(taskId);
    if (stored?.state !== output.state) throw new Error(`the terminal state ${output.state} of task ${taskId} is not stored (the row says ${stored?.state})`);
  }

  /**
   * The task's agent session, held under this worker's lease: a new task gets a session it claims
   * (a worker that loses the claim opens the winner's); a claimed one is opened, waiting while a live
   * owner holds it. Null when the task is unknown or already over.
   */
  private async acquire(taskId: string): Promise<SessionHandle | null> {
    for (let wait = 100; !this.closing; wait = Math.min(2_000, wait * 2)) {
      const task = await this.options.tasks.getTask(taskId);
      if (!task || (TERMINAL_TASK_STATES.has(task.state) && (await this.closed(task)))) return null;
      const handle = task.agentSessionId ? await this.open(task.agentSessionId) : await this.claim(task);
      if (handle) return handle;
      await new Promise((resolve) => setTimeout(resolve, wait / 2 + Math.random() * (wait / 2)));
    }
    return null;
  }

  private async open(sessionId: string): Promise<SessionHandle | null> {
    try {
      return await this.runtime.openSession(sessionId);
    } catch (error) {
      if (error instanceof TurnchartError && error.code === 'SessionOwnedElsewhere') return null;
      throw error;
    }
  }

  private async claim(task: TaskRow): Promise<SessionHandle | null> {
    let handle: SessionHandle;
    try {
      // The task's session is its submitter's: they see it, it counts as theirs, and it works in their directory.
      const { workspace } = this.options;
      handle = await this.runtime.createSession({
        agent: task.spec.agent,
        permissionMode: task.spec.permissionMode,
        ...(task.principal !== undefined && { principal: task.principal }),
        ...(workspace !== undefined && hasOwnDirectory(task.principal, false) && { workspaceDir: await userDirectory(workspace, task.principal) }),
      });
    } catch (error) {
      if (!(error instanceof TurnchartError && error.code === 'UnknownAgent')) throw error;
      await this.rejectUnrunnable(task, error.message);
      return null;
    }
    const claimed = await this.options.tasks.claimTask(task.id, handle.id, this.now());
    if (claimed?.agentSessionId === handle.id) return handle;
    await handle.close();
    return null;
  }

  /** Whether the task's last event is its `session_closed` (a worker may have died between the terminal state and it). */
  private async closed(task: TaskRow): Promise<boolean> {
    const [last] = await this.options.tasks.listTaskEvents(task.id, { afterSequence: task.eventSequence - 1 });
    return last?.eventType === 'session_closed';
  }

  /** Writes the `session_closed` a worker that died after the terminal state never wrote. */
  private async closeSession(task: TaskRow, handle: SessionHandle): Promise<void> {
    if (await this.closed(task)) return;
    const journal = new TaskJournal(task.id, this.options.tasks, this.send, { sessionId: handle.id, token: handle.fence }, this.now, this.warn);
    await journal.append('session_closed', { final_state: task.state, reason: task.reason });
  }

  /** A task no session can run (its agent does not exist here) is rejected without one. */
  private async rejectUnrunnable(task: TaskRow, reason: string): Promise<void> {
    const journal = new TaskJournal(task.id, this.options.tasks, this.send, undefined, this.now, this.warn);
    await journal.append('state_changed', { from_state: 'PENDING', to_state: 'REJECTED', reason }, { state: 'REJECTED', reason, finishedAtMs: this.now() });
    await journal.append('session_closed', { final_state: 'REJECTED', reason });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      const channel = this.link.channel;
      if (channel && this.consumerTag) await channel.cancel(this.consumerTag).catch(() => undefined);
      for (const { runner } of this.tasks.values()) runner?.halt();
      await this.relay.stop();
      await this.runtime.shutdown();
      // Unacknowledged messages go back to the queue as the connection closes.
      await this.link.close();
      await this.options.tasks.close();
    })();
    return this.closing;
  }
}

function parseMessage(message: ConsumeMessage): { taskId: string; traceParent?: string | undefined } | null {
  try {
    const parsed = taskMessageSchema.safeParse(JSON.parse(message.content.toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Acknowledges on the channel the message came on; after a reconnect that channel is gone and the broker has requeued it. */
function settle(link: AmqpLink, { message, channel }: Delivery, verdict: 'ack' | 'requeue'): void {
  if (link.channel !== channel) return;
  if (verdict === 'ack') channel.ack(message);
  else channel.nack(message, false, true);
}
