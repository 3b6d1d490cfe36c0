import type { TaskStorage } from '../../storage/task-storage.js';
import type { TaskWorker } from '../tasks/worker.js';
import { listenForMetrics, type MetricsListener } from './metrics-server.js';
import { readSources } from './metrics-sources.js';
import { SpanMetrics } from './metrics-spans.js';
import type { TurnchartMetrics } from './metrics.js';

/**
 * `turnchart worker --metrics-port` (issue 27): the worker's turns, model and tool calls from its
 * runtime's spans, its open sessions and running turns, its broker link's reconnects and the tasks by
 * state, on a listener of its own (a worker has no HTTP API to put them behind). The worker's close
 * closes the listener too.
 */
export async function exposeWorkerMetrics(metrics: TurnchartMetrics, worker: TaskWorker, tasks: TaskStorage, host: string, port: number): Promise<MetricsListener> {
  const stopObserving = worker.runtime.observeSpans(new SpanMetrics(metrics));
  readSources(metrics, { runtime: worker.runtime, brokerLinks: () => worker.brokerReconnects, tasks });
  const listener = await listenForMetrics(metrics, host, port).catch(async (error: unknown) => {
    stopObserving();
    await worker.close();
    throw error;
  });
  const closeWorker = worker.close.bind(worker);
  worker.close = async () => {
    await closeWorker();
    stopObserving();
    await listener.close();
  };
  return listener;
}
