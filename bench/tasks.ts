import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from 'amqplib';
import pg from 'pg';
import { postgresTaskStorage } from '../storage/postgres.js';
import type { TaskStorage } from '../storage/task-storage.js';
import { AmqpLink, createTaskEventConsumer, storageFetcher, submitTask, taskTopology, type TaskEventConsumer, type TaskEventEnvelope } from '../src/index.js';
import { median } from './common.js';
import { benchScript } from './child-script.js';
import { messageOf } from '../src/protocol/error-message.js';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(BENCH_DIR);

export const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/test';
export const LOCAL_AMQP = 'amqp://guest:guest@127.0.0.1:5672';

export interface TaskBenchOptions {
  /** Tasks per throughput round, all submitted at once. */
  tasks: number;
  /** `steps N` of each throughput task (N model calls with a tool + the answer). */
  steps: number;
  rounds: number;
  /** Each worker's concurrency. */
  concurrency: number;
  /** Recovery: tasks started on the worker that is killed, their steps and a step's duration. */
  recoveryTasks: number;
  recoveryRounds: number;
}

export interface TaskBenchResult {
  perSecond: { oneWorker: number[]; twoWorkers: number[] };
  medians: { oneWorker: number; twoWorkers: number };
  /** ms from the SIGKILL to each of the killed worker's tasks announcing `recovered_from_checkpoint` elsewhere. */
  recoveryMs: number[];
}

/** A deployment of one run: a PostgreSQL schema and a RabbitMQ namespace of its own, and the worker processes. */
class Deployment {
  readonly schema = `tc_bench_${randomUUID().replaceAll('-', '')}`;
  readonly namespace = `tc-bench-${randomUUID()}`;
  readonly databaseUrl: string;
  readonly tasks: TaskStorage;
  readonly workers: Array<{ child: ChildProcess; pid: number; exited: Promise<unknown> }> = [];
  private link: AmqpLink | null = null;
  private consumer: TaskEventConsumer | null = null;
  readonly seen = new Map<string, { at: number; event: TaskEventEnvelope }[]>();
  private listeners: Array<() => void> = [];

  constructor(
    private readonly pgUrl: string,
    private readonly amqpUrl: string,
  ) {
    this.databaseUrl = `${pgUrl}?schema=${this.schema}`;
    this.tasks = postgresTaskStorage({ connectionString: pgUrl, schema: this.schema });
  }

  async open(): Promise<void> {
    await this.tasks.migrate();
    this.link = await AmqpLink.open({ url: this.amqpUrl, name: 'bench', warn: () => undefined });
    this.consumer = await createTaskEventConsumer({
      amqpUrl: this.amqpUrl,
      namespace: this.namespace,
      positions: { load: async () => 0, save: async () => undefined },
      fetchRange: storageFetcher(this.tasks),
      handle: (event) => {
        const list = this.seen.get(event.session_id) ?? [];
        list.push({ at: performance.now(), event });
        this.seen.set(event.session_id, list);
        for (const listener of this.listeners) listener();
      },
      warn: () => undefined,
    });
  }

  async spawnWorker(concurrency: number, stepMs: number): Promise<void> {
    const config = { databaseUrl: this.databaseUrl, amqpUrl: this.amqpUrl, namespace: this.namespace, concurrency, stepMs };
    const script = benchScript('task-worker-process');
    const child = spawn(process.execPath, [...script.execArgv, script.file, JSON.stringify(config)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('bench worker ready')) resolve();
      });
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      void exited.then(() => reject(new Error(`a bench worker exited before it was ready:\n${output}`)));
    });
    this.workers.push({ child, pid: child.pid!, exited });
  }

  submit(taskId: string, prompt: string): Promise<unknown> {
    return submitTask({ tasks: this.tasks, link: this.link!, namespace: this.namespace }, { taskId, prompts: [prompt] });
  }

  /** Resolves once `condition` holds, checked after every event handled; fails after two minutes. */
  until(condition: () => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the task bench waited two minutes for its tasks')), 120_000);
      const check = () => {
        if (!condition()) return;
        this.listeners = this.listeners.filter((l) => l !== check);
        clearTimeout(timer);
        resolve();
      };
      this.listeners.push(check);
      check();
    });
  }

  closed(ids: string[]): boolean {
    return ids.every((id) => this.seen.get(id)?.some((s) => s.event.payload.event_type === 'session_closed'));
  }

  async close(): Promise<void> {
    for (const w of this.workers) w.child.kill('SIGKILL');
    await Promise.all(this.workers.map((w) => w.exited));
    await this.consumer?.close();
    await this.link?.close();
    await this.tasks.close();
    const topology = taskTopology(this.namespace);
    const connection = await connect(this.amqpUrl);
    const channel = await connection.createChannel();
    await channel.deleteQueue(topology.queue);
    await channel.deleteExchange(topology.eventsExchange);
    await channel.deleteExchange(topology.controlExchange);
    await connection.close();
    const client = new pg.Client({ connectionString: this.pgUrl });
    await client.connect();
    await client.query(`drop schema if exists "${this.schema}" cascade`);
    await client.end();
  }
}

/** Tasks per second with `workers` worker processes: every task submitted at once, until the last `session_closed` arrives. */
async function throughputRound(urls: Urls, workers: number, options: TaskBenchOptions): Promise<number> {
  const d = new Deployment(urls.pg, urls.amqp);
  try {
    await d.open();
    for (let i = 0; i < workers; i++) await d.spawnWorker(options.concurrency, 0);
    const ids = Array.from({ length: options.tasks }, (_, i) => `bench-${i}`);
    const started = performance.now();
    await Promise.all(ids.map((id) => d.submit(id, `steps ${options.steps}`)));
    await d.until(() => d.closed(ids));
    return (options.tasks * 1000) / (performance.now() - started);
  } finally {
    await d.close();
  }
}

/**
 * Two workers; the recovery tasks are started on the first alone (the second starts once they
 * run), then it is SIGKILLed: per task, the time until another worker announces
 * `recovered_from_checkpoint` for it.
 */
async function recoveryRound(urls: Urls, options: TaskBenchOptions): Promise<number[]> {
  const d = new Deployment(urls.pg, urls.amqp);
  try {
    await d.open();
    // 15 steps of 2 s: the tasks are still running when their worker is killed, however long the second worker takes to start
    // (the default agent allows 20 model calls).
    await d.spawnWorker(options.recoveryTasks, 2_000);
    const ids = Array.from({ length: options.recoveryTasks }, (_, i) => `recover-${i}`);
    await Promise.all(ids.map((id) => d.submit(id, 'steps 15')));
    // Each task has stored a tool result: it is running on the first worker.
    await d.until(() => ids.every((id) => d.seen.get(id)?.some((s) => s.event.payload.event_type === 'checkpoint_created')));
    await d.spawnWorker(options.recoveryTasks, 2_000);
    const killedAt = performance.now();
    d.workers[0]!.child.kill('SIGKILL');
    const recoveredAt = (id: string) => d.seen.get(id)?.find((s) => s.event.payload.data.reason === 'recovered_from_checkpoint')?.at;
    await d.until(() => ids.every((id) => recoveredAt(id) !== undefined));
    return ids.map((id) => recoveredAt(id)! - killedAt);
  } finally {
    await d.close();
  }
}

interface Urls {
  pg: string;
  amqp: string;
}

/** Why the task figures cannot be measured here (no PostgreSQL or RabbitMQ), or null. */
export async function taskBenchUnavailable(urls: Urls): Promise<string | null> {
  const client = new pg.Client({ connectionString: urls.pg, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
  } catch (error) {
    return `no PostgreSQL at ${urls.pg} (${messageOf(error)})`;
  } finally {
    await client.end().catch(() => undefined);
  }
  try {
    const connection = await connect(urls.amqp, { timeout: 2_000 });
    await connection.close();
  } catch (error) {
    return `no RabbitMQ at ${urls.amqp.replace(/\/\/[^@]*@/, '//')} (${messageOf(error)})`;
  }
  return null;
}

export async function measureTasks(urls: Urls, options: TaskBenchOptions): Promise<TaskBenchResult> {
  const oneWorker: number[] = [];
  const twoWorkers: number[] = [];
  // Alternating order, so drift in the machine's load falls on both sides alike.
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? [1, 2] : [2, 1];
    for (const workers of order) (workers === 1 ? oneWorker : twoWorkers).push(await throughputRound(urls, workers, options));
  }
  const recoveryMs: number[] = [];
  for (let round = 0; round < options.recoveryRounds; round++) recoveryMs.push(...(await recoveryRound(urls, options)));
  return { perSecond: { oneWorker, twoWorkers }, medians: { oneWorker: median(oneWorker), twoWorkers: median(twoWorkers) }, recoveryMs };
}

export const TASKS: TaskBenchOptions = { tasks: 40, steps: 2, rounds: 3, concurrency: 8, recoveryTasks: 6, recoveryRounds: 3 };

/** The `[tasks]` section of the report; resolves with its figure lines. */
export async function reportTasks(log: (line?: string) => void, options: TaskBenchOptions = TASKS): Promise<string[]> {
  const urls = { pg: process.env.TEST_DATABASE_URL ?? LOCAL_POSTGRES, amqp: process.env.TEST_AMQP_URL ?? LOCAL_AMQP };
  const unavailable = await taskBenchUnavailable(urls);
  if (unavailable) {
    log(`[tasks] skipped: ${unavailable}`);
    log();
    return ['tasks_per_s_1_worker: n/a', 'tasks_per_s_2_workers: n/a', 'task_recovery_p50_ms: n/a', 'task_recovery_max_ms: n/a'];
  }
  const started = performance.now();
  const result = await measureTasks(urls, options);
  const r = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
  const samples = (xs: number[]) => xs.map((x) => r(x)).join(', ');
  const sorted = [...result.recoveryMs].sort((a, b) => a - b);
  const p50 = median(sorted);
  const max = sorted.at(-1) ?? 0;
  log(`[tasks] ${options.tasks} tasks submitted at once, each one turn of ${options.steps} tool steps + the answer (zero-latency model), worker processes of concurrency ${options.concurrency}, PostgreSQL + RabbitMQ, ${options.rounds} rounds per side`);
  log(`  1 worker   median ${r(result.medians.oneWorker)} tasks/s  (samples ${samples(result.perSecond.oneWorker)})`);
  log(`  2 workers  median ${r(result.medians.twoWorkers)} tasks/s  (samples ${samples(result.perSecond.twoWorkers)}) → ${r(result.medians.twoWorkers / result.medians.oneWorker, 2)}× one worker`);
  log(`  recovery: ${options.recoveryTasks} tasks running on a worker that is SIGKILLed, ${options.recoveryRounds} rounds: kill → recovered_from_checkpoint from the other worker`);
  log(`  p50 ${r(p50)} ms, max ${r(max)} ms  (samples ${samples(sorted)})`);
  log(`  informational: ${r((performance.now() - started) / 1000)} s for [tasks]`);
  log();
  return [
    `tasks_per_s_1_worker: ${r(result.medians.oneWorker)}`,
    `tasks_per_s_2_workers: ${r(result.medians.twoWorkers)}`,
    `task_recovery_p50_ms: ${r(p50)}`,
    `task_recovery_max_ms: ${r(max)}`,
  ];
}
