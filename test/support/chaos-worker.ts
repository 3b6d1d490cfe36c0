/**
 * One worker of the chaos suites, in a process of its own so it can be SIGKILLed: the task model
 * and tools of test/support/task-model.ts, every `step` run appended to a file before it returns
 * (a run the kill cut short after the side effect is still on record). Config: JSON in argv[2].
 */
import { appendFileSync } from 'node:fs';
import { postgresStorage, postgresTaskStorage } from '../../storage/postgres.js';
import { startWorker } from '../../src/tasks/worker.js';
import { taskModel, TaskToolLog, taskTools } from './task-model.js';

interface ChaosWorkerConfig {
  databaseUrl: string;
  amqpUrl: string;
  namespace: string;
  runsFile: string;
  concurrency: number;
}

const config = JSON.parse(process.argv[2]!) as ChaosWorkerConfig;
const tools = taskTools(new TaskToolLog(), (run) => appendFileSync(config.runsFile, `${JSON.stringify(run)}\n`));
const worker = await startWorker({
  sessions: postgresStorage({ connectionString: config.databaseUrl }),
  tasks: postgresTaskStorage({ connectionString: config.databaseUrl }),
  amqpUrl: config.amqpUrl,
  namespace: config.namespace,
  model: taskModel(),
  tools,
  concurrency: config.concurrency,
  leaseTtlMs: 3_000,
  relay: { graceMs: 300, intervalMs: 300 },
  warn: (message) => process.stderr.write(`${message}\n`),
});
console.log(`chaos worker ready ${worker.ownerId}`);
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
