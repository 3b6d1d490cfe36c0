import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/poll.js';
import { logLines } from '../support/log-lines.js';
import { AMQP_URL, TASK_SUITE_SKIP, TaskStack } from '../support/task-stack.js';
import { useTempDirs } from '../support/workspace.js';
import { bundled } from '../support/bundles.js';

if (TASK_SUITE_SKIP) console.log(`Task CLI suite skipped: ${TASK_SUITE_SKIP}`);

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = [bundled('cli')];
const tempDir = useTempDirs('turnchart-task-cli-');

describe.skipIf(TASK_SUITE_SKIP !== null)('turnchart worker and turnchart submit, as an operator runs them', { timeout: 90_000 }, () => {
  let stack: TaskStack;
  const workers: ChildProcess[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) {
      w.kill('SIGKILL');
      await new Promise((resolve) => (w.exitCode !== null ? resolve(null) : w.once('exit', resolve)));
    }
    await stack.close();
  });

  it('a submitted task is run to COMPLETED by a worker process; submitting it again prints the same task', async () => {
    stack = await new TaskStack().ready();
    const env = { ...process.env, DATABASE_URL: stack.databaseUrl, TURNCHART_AMQP_URL: AMQP_URL!, TURNCHART_AMQP_NAMESPACE: stack.namespace };
    const worker = spawn(process.execPath, [...CLI, 'worker', '--concurrency', '2', '--workspace', await tempDir()], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    workers.push(worker);
    let output = '';
    worker.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    worker.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    await until('the worker to be ready', () => output.includes('turnchart worker ready'), 60_000);

    const submit = () => spawnSync(process.execPath, [...CLI, 'submit', '--task-id', 'cli-1', 'look at the workspace'], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    const first = submit();
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout.trim().split('\n').at(-1)!)).toMatchObject({ created: true, taskId: 'cli-1', state: 'PENDING', turnCount: 1 });
    await until('the task to complete', async () => (await stack.tasks.getTask('cli-1'))?.state === 'COMPLETED', 60_000);
    const again = submit();
    expect(JSON.parse(again.stdout.trim().split('\n').at(-1)!)).toMatchObject({ created: false, state: 'COMPLETED' });

    worker.kill('SIGTERM');
    // 'close', not 'exit': its last lines read.
    await new Promise((resolve) => worker.once('close', resolve));
    expect(logLines(output).at(-1)).toMatchObject({ name: 'turnchart worker', msg: 'stopped' });
  });

  it('refuses to start without a broker URL, naming the setting', () => {
    const result = spawnSync(process.execPath, [...CLI, 'worker'], { cwd: ROOT, env: { ...process.env, TURNCHART_AMQP_URL: '' }, encoding: 'utf8', timeout: 30_000 });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--amqp-url');
    stack = new TaskStack();
  });
});
