import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { taskSpecSchema } from '../../src/protocol/task-spec.js';
import { bundled } from '../support/bundles.js';
import { useTempDirs } from '../support/workspace.js';
import { TurnchartMetrics } from '../../src/telemetry/metrics.js';
import { exposeWorkerMetrics } from '../../src/telemetry/metrics-worker.js';
import type { TestHost } from '../support/host.js';
import { until } from '../support/poll.js';
import { parsePrometheusText, samplesOf, valueOf, type Exposition } from '../support/prometheus-text.js';
import { AMQP_URL, TASK_SUITE_SKIP, TaskStack } from '../support/task-stack.js';
import { taskModel, TaskToolLog, taskTools } from '../support/task-model.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const tempDir = useTempDirs('turnchart-metrics-worker-');

async function scrape(url: string): Promise<Exposition> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return parsePrometheusText(await response.text());
}

/** Polls the task through the API until it is in `state` (the worker tells the host nothing directly). */
async function untilState(host: TestHost, taskId: string, state: string): Promise<void> {
  await until(`task ${taskId} ${state}`, async () => (await host.call('GET', `/tasks/${taskId}`)).body.state === state);
}

/** `turnchart worker --metrics-port` in process (issue 27): a worker's own listener, on PostgreSQL and RabbitMQ. */
describe.skipIf(TASK_SUITE_SKIP !== null)('the metrics of a task worker (issue 27)', () => {
  let stack: TaskStack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('serves its turns, tool calls, sessions and the tasks by state on a listener of its own', async () => {
    stack = await new TaskStack().ready();
    const log = new TaskToolLog();
    const model = taskModel();
    const worker = await stack.worker({ model, tools: taskTools(log) });
    const listener = await exposeWorkerMetrics(new TurnchartMetrics(), worker, stack.tasks, '127.0.0.1', 0);
    const host = await stack.host(model);

    // A task held in its tool: one live RUNNING task, one open session, one running turn.
    expect((await host.call('POST', '/tasks', { taskId: 'held', prompts: ['block'] })).status).toBe(201);
    await log.untilBlocked();
    await untilState(host, 'held', 'RUNNING');
    const held = await scrape(listener.url);
    expect(Object.fromEntries(samplesOf(held, 'turnchart_tasks').map((s) => [s.labels.state, s.value]))).toEqual({ RUNNING: 1 });
    expect(valueOf(held, 'turnchart_open_sessions')).toBe(1);
    expect(valueOf(held, 'turnchart_running_turns')).toBe(1);

    // Released, and a second task of two steps: both complete.
    log.blocked[0]!.release();
    await untilState(host, 'held', 'COMPLETED');
    expect((await host.call('POST', '/tasks', { taskId: 'steps', prompts: ['steps 2'] })).status).toBe(201);
    await untilState(host, 'steps', 'COMPLETED');
    const done = await scrape(listener.url);
    expect(samplesOf(done, 'turnchart_tasks')).toEqual([]);
    expect(valueOf(done, 'turnchart_turns_total', { status: 'completed' })).toBe(2);
    expect(valueOf(done, 'turnchart_turns_total')).toBe(2);
    expect(valueOf(done, 'turnchart_tool_calls_total', { tool: 'block', status: 'succeeded' })).toBe(1);
    expect(valueOf(done, 'turnchart_tool_calls_total', { tool: 'step', status: 'succeeded' })).toBe(2);
    expect(valueOf(done, 'turnchart_model_call_duration_seconds_count')).toBe(model.calls);
    expect(valueOf(done, 'turnchart_broker_reconnects_total')).toBe(0);
    expect(done.samples.flatMap((s) => Object.values(s.labels)).some((v) => v === 'held' || v === 'steps')).toBe(false);

    // Closing the worker closes its listener.
    await worker.close();
    await expect(fetch(listener.url)).rejects.toThrow();
  });

  it('turnchart worker --metrics-port: a worker process serves them without a token', { timeout: 90_000 }, async () => {
    stack = await new TaskStack().ready();
    const env = { ...process.env, DATABASE_URL: stack.databaseUrl, TURNCHART_AMQP_URL: AMQP_URL!, TURNCHART_AMQP_NAMESPACE: stack.namespace };
    const worker: ChildProcess = spawn(process.execPath, [bundled('cli'), 'worker', '--metrics-port', '0', '--workspace', await tempDir()], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let output = '';
      worker.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      worker.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      let metricsUrl = '';
      await until('the worker to tell where its metrics are', () => (metricsUrl = /metrics on (http:\/\/[^\s"]+\/metrics)/.exec(output)?.[1] ?? '') !== '', 60_000);
      expect(new URL(metricsUrl).hostname).toBe('127.0.0.1');
      // A task stored but never published: it waits PENDING, and the worker's scrape counts it from the database.
      await stack.tasks.createTask('waiting', taskSpecSchema.parse({ taskId: 'waiting', prompts: ['go'] }), Date.now());
      const m = await scrape(metricsUrl);
      expect(Object.fromEntries(samplesOf(m, 'turnchart_tasks').map((s) => [s.labels.state, s.value]))).toEqual({ PENDING: 1 });
      expect(valueOf(m, 'turnchart_open_sessions')).toBe(0);
      expect(samplesOf(m, 'process_cpu_user_seconds_total')).toHaveLength(1);
      worker.kill('SIGTERM');
      expect(await new Promise((resolve) => worker.once('exit', (code) => resolve(code)))).toBe(0);
    } finally {
      if (worker.exitCode === null) worker.kill('SIGKILL');
    }
  });
});
