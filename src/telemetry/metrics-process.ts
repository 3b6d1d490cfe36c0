import { collectDefaultMetrics, Registry } from 'prom-client';

let shared: Registry | null = null;

/**
 * Node's default process metrics (CPU, memory, heap, event-loop lag, GC, handles, file descriptors)
 * in a registry of turnchart's own — never prom-client's global one, which an embedder may use for
 * its own metrics. One per process, made on first use: these describe the process whatever number
 * of hosts it runs, and prom-client cannot stop what it starts for them (a GC observer, an
 * event-loop delay monitor), so a registry per host would leave one more of each behind every host
 * a long-lived process (a test run) starts and closes.
 */
export function processRegistry(): Registry {
  if (shared) return shared;
  shared = new Registry();
  collectDefaultMetrics({ register: shared });
  return shared;
}
