import type { Counter } from 'prom-client';
import type { TaskState } from '../../machines/task.machine.js';
import { withDeadline } from '../util/deadline.js';
import type { TurnchartMetrics } from './metrics.js';

/** What the runtime tells on scrape (`Runtime` has each). */
interface RuntimeReadings {
  readonly openSessionCount: number;
  readonly turnCounts: { running: number; queued: number };
  readonly leaseTakeovers: number;
  readonly droppedSignals: number;
}

/** What a host's stream census tells (`StreamLimit`). */
interface StreamReadings {
  readonly openStreams: number;
  readonly lagged: number;
}

/** What a cluster membership tells: routed commands by result, and its broker link's reconnects. */
export interface ClusterReadings {
  routedCommands: Readonly<Record<string, number>>;
  brokerReconnects: number;
}

export interface MetricSources {
  runtime?: RuntimeReadings;
  streams?: StreamReadings;
  cluster?: () => ClusterReadings | null;
  /** Reconnects of the process's other broker links (a host's task link, a worker's). */
  brokerLinks?: () => number;
  /** Counts of the tasks not yet finished, by state (`TaskStorage.countLiveTasks`). */
  tasks?: { countLiveTasks(): Promise<Partial<Record<TaskState, number>>> } | null;
}

/** A scrape waits this long for the task counts; a database that does not answer leaves them out of that scrape. */
const TASK_COUNT_DEADLINE_MS = 2_000;

/**
 * Reads levels and kept numbers into the metrics on every scrape (issue 27). The components keep
 * plain integers (`droppedSignals` is the pattern), so their hot paths pay an increment and never
 * learn about Prometheus; a counter here takes what a number grew by since the last scrape.
 */
export function readSources(metrics: TurnchartMetrics, sources: MetricSources): void {
  const growth = new CounterGrowth();
  metrics.onScrape(async () => {
    const { runtime, streams, cluster, brokerLinks, tasks } = sources;
    if (runtime) {
      metrics.openSessions.set(runtime.openSessionCount);
      const { running, queued } = runtime.turnCounts;
      metrics.runningTurns.set(running);
      metrics.queuedTurns.set(queued);
      growth.to(metrics.leaseTakeovers, '', runtime.leaseTakeovers);
      growth.to(metrics.traceSignalsDropped, '', runtime.droppedSignals);
    }
    if (streams) {
      metrics.sseClients.set(streams.openStreams);
      growth.to(metrics.sseDropped, '', streams.lagged);
    }
    const joined = cluster?.() ?? null;
    if (joined) for (const [result, count] of Object.entries(joined.routedCommands)) growth.to(metrics.routedCommands, result, count, { result });
    growth.to(metrics.brokerReconnects, '', (joined?.brokerReconnects ?? 0) + (brokerLinks?.() ?? 0));
    if (tasks) await readTasks(metrics, tasks);
  });
}

async function readTasks(metrics: TurnchartMetrics, tasks: NonNullable<MetricSources['tasks']>): Promise<void> {
  const counts = await withDeadline<Partial<Record<TaskState, number>> | null>(tasks.countLiveTasks(), TASK_COUNT_DEADLINE_MS, () => null).catch(() => null);
  // Replaced in one synchronous step: a scrape read meanwhile sees the last counts or the new ones, never none.
  metrics.tasks.reset();
  if (!counts) {
    metrics.storageErrors.inc({ operation: 'countLiveTasks' });
    return;
  }
  for (const [state, count] of Object.entries(counts)) metrics.tasks.set({ state }, count);
}

/** What each counter was last told, so that a growing number becomes increments. */
class CounterGrowth {
  private readonly last = new Map<Counter<string>, Map<string, number>>();

  to<L extends string>(counter: Counter<L>, key: string, value: number, labels?: Record<L, string>): void {
    let seen = this.last.get(counter as Counter<string>);
    if (!seen) this.last.set(counter as Counter<string>, (seen = new Map()));
    const before = seen.get(key);
    seen.set(key, value);
    // A number that went down started again (a new link): what it holds now is new.
    const grown = before === undefined || value < before ? value : value - before;
    // A label value first seen at 0 is shown at 0, so a rate over it starts from the first scrape.
    if (grown === 0 && before !== undefined) return;
    if (labels) counter.inc(labels, grown);
    else counter.inc(grown);
  }
}
