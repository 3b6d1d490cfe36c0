import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { processRegistry } from './metrics-process.js';

/**
 * A process's metrics in the Prometheus text format (issue 27): one registry per host or worker, so
 * several of them in one process (the tests start many) never count into each other. Labels are
 * bounded: agent, tool and model names (capped, `metrics-labels.ts`), statuses and results from
 * fixed lists; never a session, turn, task or call id, a principal, or user text.
 *
 * What the runtime does is counted as it happens, from its spans (`metrics-spans.ts`); what is a
 * level (open sessions, streams, tasks by state) or a number a component keeps is read when the
 * registry is scraped (`metrics-sources.ts`), so nothing on the hot path knows about Prometheus.
 */
export class TurnchartMetrics {
  readonly registry = new Registry();
  private readonly scrapeHooks: (() => Promise<void>)[] = [];
  private reading: Promise<unknown> | null = null;

  // Turns, model calls, tool calls: from spans.
  readonly turns = this.counter('turnchart_turns_total', 'Turns that ended here, by agent and final status (completed, failed, cancelled, timed_out).', ['agent', 'status']);
  readonly turnDuration = this.histogram(
    'turnchart_turn_duration_seconds',
    'How long turns ran here, from their first write to their end (a resumed turn: from its resumption), by agent and final status.',
    ['agent', 'status'],
    [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1_800, 3_600],
  );
  readonly modelCallDuration = this.histogram(
    'turnchart_model_call_duration_seconds',
    'Model calls, from the request to the end of the streamed response, by model and status (succeeded, failed, cancelled).',
    ['model', 'status'],
    [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
  );
  readonly timeToFirstToken = this.histogram(
    'turnchart_model_time_to_first_token_seconds',
    "From a model call's start to its first text or reasoning, by model.",
    ['model'],
    [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
  );
  readonly tokens = this.counter(
    'turnchart_model_tokens_total',
    'Tokens model calls used, as the provider reported them, by model and type (input, output, cached_input: of the input, read from the prompt cache; reasoning: of the output).',
    ['model', 'type'],
  );
  readonly toolCalls = this.counter('turnchart_tool_calls_total', 'Tool calls that ended, by tool and status (succeeded, failed, cancelled, denied, outcome_unknown).', ['tool', 'status']);
  readonly toolCallDuration = this.histogram(
    'turnchart_tool_call_duration_seconds',
    'Tool calls from their start to their result (a wait for approval included), by tool and status.',
    ['tool', 'status'],
    [0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 60, 300, 900],
  );
  readonly permissionWait = this.histogram(
    'turnchart_permission_wait_seconds',
    'How long tool calls waited for a person to answer their approval, by decision (allowed_by_user, denied_by_timeout, …).',
    ['decision'],
    [1, 5, 15, 30, 60, 300, 900, 3_600, 86_400],
  );

  // Levels and numbers the components keep: read on scrape.
  readonly openSessions = this.gauge('turnchart_open_sessions', 'Sessions open in this process.');
  readonly runningTurns = this.gauge('turnchart_running_turns', "Turns running in this process's sessions.");
  readonly queuedTurns = this.gauge('turnchart_queued_turns', "Turns queued behind a running one in this process's sessions.");
  readonly sseClients = this.gauge('turnchart_sse_clients', 'Streams open on this host: session event streams, the inspector\'s and the AI SDK\'s response streams.');
  readonly sseDropped = this.counter('turnchart_sse_clients_dropped_total', 'Stream clients cut off for falling too far behind (they resume with their last id).', []);
  readonly leaseTakeovers = this.counter('turnchart_lease_takeovers_total', 'Sessions this process opened by taking them from an owner whose lease had run out.', []);
  readonly routedCommands = this.counter(
    'turnchart_routed_commands_total',
    'Commands routed to the host that holds their session, by result (answered, owner_unavailable, owner_timeout, transport_unavailable, unreadable_reply).',
    ['result'],
  );
  readonly brokerReconnects = this.counter('turnchart_broker_reconnects_total', 'Times a RabbitMQ connection of this process was lost and made again.', []);
  readonly tasks = this.gauge('turnchart_tasks', 'Tasks not yet finished in the database, by state (PENDING, RUNNING, PAUSED, ABORTING).', ['state']);
  readonly storageErrors = this.counter('turnchart_storage_errors_total', 'Storage calls that failed (a fenced write excepted: that is a lease lost, not a failure), by operation.', ['operation']);
  readonly traceSignalsDropped = this.counter('turnchart_trace_signals_dropped_total', 'Trace span signals lost to a full queue or a failing write (the spans themselves were still observed).', []);

  constructor() {
    // Node's own metrics describe the process, not a host: one set, shared by every registry in it.
    processRegistry();
  }

  /** Runs before every scrape: what reads levels and kept numbers into the metrics. */
  onScrape(hook: () => Promise<void>): void {
    this.scrapeHooks.push(hook);
  }

  readonly contentType = this.registry.contentType;

  /** The text a scraper reads: this registry's metrics, then the process's. */
  async text(): Promise<string> {
    // Scrapes that come together share one reading (one task count query, not one each).
    this.reading ??= Promise.all(this.scrapeHooks.map((hook) => hook())).finally(() => (this.reading = null));
    await this.reading;
    return (await this.registry.metrics()) + (await processRegistry().metrics());
  }

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]): Histogram<L> {
    return new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }
}
