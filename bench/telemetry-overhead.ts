/**
 * Issue 27's span observers, priced per model step against the same runtime without them:
 *
 * - `metrics_overhead_ratio`: µs per model step with a `SpanMetrics` observer (the Prometheus
 *   metrics a host keeps, one `TurnchartMetrics` registry per side, as a host keeps one for its life)
 *   ÷ µs per step without.
 * - `otel_overhead_ratio`: the same with an `OtelSpans` observer (`otelSpans()`), content off, whose
 *   tracer is OpenTelemetry's real SDK tracer: `@opentelemetry/sdk-trace-base`'s
 *   `BasicTracerProvider` with a `BatchSpanProcessor` over an exporter that drops the spans in
 *   memory, so the SDK's span objects, the processor's queue and its export path all run, and no
 *   network does. The package is reached as the optional `@opentelemetry/sdk-node`'s `tracing` (its
 *   own dependency, the same module), loaded when the bench runs: without it both OpenTelemetry
 *   figures are `skipped`.
 * - `otel_content_overhead_ratio` (informational): the same with `recordContent: true` — the runtime
 *   then gathers each call's messages, arguments and results, and the observer sanitizes them into
 *   attributes.
 *
 * All sides are the `inspect_overhead_ratio` workload (the runtime side of `step_overhead_ratio`: 10
 * tool steps + the final answer per turn, SQLite `:memory:`, zero-latency model). Each observer is a
 * pair of its own with a plain side, run back to back in each round by `compareSides`; each figure is
 * the median of its per-round ratios. On the OpenTelemetry sides the clock stops only once the
 * processor has flushed every span of the rep to the exporter: the export is part of the work the
 * steps caused.
 */
import { fileURLToPath } from 'node:url';
import type { tracing } from '@opentelemetry/sdk-node';
import { createRuntime, otelSpans, sqliteStorage } from '../src/index.js';
import { SpanMetrics } from '../src/telemetry/metrics-spans.js';
import { TurnchartMetrics } from '../src/telemetry/metrics.js';
import { median, readTool, stepModel, trackedStorage } from './common.js';
import { compareSides, timeTurns, type Side } from './step-overhead.js';

export interface TelemetryOverheadOptions {
  toolSteps: number;
  turnsPerRep: number;
  warmupReps: number;
  reps: number;
}

type Observer = 'none' | 'metrics' | 'otel' | 'otel-content';

/** `@opentelemetry/sdk-trace-base`, as `@opentelemetry/sdk-node` re-exports it. */
type TraceSdk = typeof tracing;

/** A span exporter that keeps nothing: it counts the spans and reports success, as a collector that answered would. */
class DroppingExporter implements tracing.SpanExporter {
  spans = 0;

  export(spans: tracing.ReadableSpan[], resultCallback: Parameters<tracing.SpanExporter['export']>[1]): void {
    this.spans += spans.length;
    resultCallback({ code: 0 }); // ExportResultCode.SUCCESS
  }

  async shutdown(): Promise<void> {}
}

/** The trace SDK, or why it is missing (an install without optional dependencies). */
async function loadTraceSdk(): Promise<TraceSdk | string> {
  try {
    return (await import('@opentelemetry/sdk-node')).tracing;
  } catch (error) {
    return `@opentelemetry/sdk-node (optional) could not be loaded: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function side(toolSteps: number, observer: Observer, sdk: TraceSdk | null = null): Side & { exported: number } {
  // One registry for the side's whole life, as a host keeps one: its label sets exist after the first rep.
  const metrics = observer === 'metrics' ? new TurnchartMetrics() : null;
  const exporter = new DroppingExporter();
  const result = {
    name: observer,
    get exported() {
      return exporter.spans;
    },
    async rep(turns: number) {
      const storage = trackedStorage(sqliteStorage({ filename: ':memory:' }));
      const runtime = await createRuntime({ storage, model: stepModel(toolSteps), tools: [readTool()], agents: { default: { maxModelCalls: 50 } } });
      if (metrics) runtime.observeSpans(new SpanMetrics(metrics));
      let provider: tracing.BasicTracerProvider | null = null;
      let otel: ReturnType<typeof otelSpans> | null = null;
      if (observer === 'otel' || observer === 'otel-content') {
        if (!sdk) throw new Error(`the ${observer} side needs the trace SDK`);
        provider = new sdk.BasicTracerProvider({ spanProcessors: [new sdk.BatchSpanProcessor(exporter)] });
        otel = otelSpans(runtime, { tracer: provider.getTracer('turnchart'), recordContent: observer === 'otel-content' });
      }
      // The batch processor exports on a timer or a full batch: what it still holds is part of these steps.
      const rep = await timeTurns(runtime, storage, turns, toolSteps, { settle: async () => void (await provider?.forceFlush()) });
      otel?.stop();
      await provider?.shutdown();
      await runtime.shutdown();
      return rep;
    },
  };
  return result;
}

export interface TelemetryOverheadPair {
  /** The runtime without the observer, in the same rounds. */
  plain: { median: number; samples: number[] };
  observed: { median: number; samples: number[] };
  /** Median of the per-round ratios (both sides back to back): the headline figure. */
  pairedRatio: number;
  /** Informational: the ratio of the medians. */
  ratio: number;
}

export interface TelemetryOverheadResult {
  metrics: TelemetryOverheadPair;
  otel:
    | {
        pair: TelemetryOverheadPair;
        content: TelemetryOverheadPair;
        /** Spans the exporter received per model step (content off): shows the export path ran. */
        exportedPerStep: number;
      }
    | { skipped: string };
}

/**
 * Each observer against its own plain side, as `inspect_overhead_ratio` does: a pair shares nothing
 * with another (the garbage the content side leaves is not collected in the metrics side's rounds).
 */
async function pair(toolSteps: number, observer: Observer, options: TelemetryOverheadOptions, sdk: TraceSdk | null = null): Promise<TelemetryOverheadPair & { exported: number }> {
  const observed = side(toolSteps, observer, sdk);
  const [a, b] = await compareSides([side(toolSteps, 'none'), observed], options);
  return {
    plain: { median: a!.median, samples: a!.samples },
    observed: { median: b!.median, samples: b!.samples },
    pairedRatio: median(b!.samples.map((x, i) => x / a!.samples[i]!)),
    ratio: b!.median / a!.median,
    exported: observed.exported,
  };
}

export async function measureTelemetryOverhead(options: TelemetryOverheadOptions): Promise<TelemetryOverheadResult> {
  const metrics = await pair(options.toolSteps, 'metrics', options);
  const sdk = await loadTraceSdk();
  if (typeof sdk === 'string') return { metrics, otel: { skipped: sdk } };
  const otel = await pair(options.toolSteps, 'otel', options, sdk);
  const content = await pair(options.toolSteps, 'otel-content', options, sdk);
  if (otel.exported === 0 || content.exported === 0) throw new Error('an OpenTelemetry side exported no span: the bench measured nothing');
  const steps = (options.warmupReps + options.reps) * options.turnsPerRep * (options.toolSteps + 1);
  return { metrics, otel: { pair: otel, content, exportedPerStep: otel.exported / steps } };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const r = await measureTelemetryOverhead({ toolSteps: 10, turnsPerRep: 20, warmupReps: 20, reps: 21 });
  const line = (name: string, p: TelemetryOverheadPair, extra = '') =>
    `${name}: ${p.pairedRatio.toFixed(2)} (plain ${p.plain.median.toFixed(1)} µs/step, observed ${p.observed.median.toFixed(1)} µs/step; ratio of the medians ${p.ratio.toFixed(2)}${extra})`;
  console.log(line('metrics_overhead_ratio', r.metrics));
  if ('skipped' in r.otel) console.log(`otel_overhead_ratio: skipped (${r.otel.skipped})\notel_content_overhead_ratio: skipped`);
  else {
    console.log(line('otel_overhead_ratio', r.otel.pair, `; ${r.otel.exportedPerStep.toFixed(2)} spans exported per step`));
    console.log(line('otel_content_overhead_ratio', r.otel.content));
  }
}
