/** One worker of the task figures, in a process of its own (it is SIGKILLed): config as JSON in argv[2]. */
import { postgresStorage, postgresTaskStorage } from '../storage/postgres.js';
import { startWorker } from '../src/tasks/worker.js';
import { benchTaskModel, benchTaskTools } from './task-agent.js';

const config = JSON.parse(process.argv[2]!) as { databaseUrl: string; amqpUrl: string; namespace: string; concurrency: number; stepMs: number };
const worker = await startWorker({
  sessions: postgresStorage({ connectionString: config.databaseUrl }),
  tasks: postgresTaskStorage({ connectionString: config.databaseUrl }),
  amqpUrl: config.amqpUrl,
  namespace: config.namespace,
  model: benchTaskModel(),
  tools: benchTaskTools(config.stepMs),
  concurrency: config.concurrency,
  warn: () => undefined,
});
console.log(`bench worker ready ${process.pid}`);
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
