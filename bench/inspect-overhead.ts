/**
 * `inspect_overhead_ratio`: µs per model step of a session that an inspector page watches ÷ µs per
 * step of the same session unwatched. Both sides are the same runtime workload (as
 * `step_overhead_ratio`'s runtime side: 10 tool steps + the final answer per turn, SQLite
 * `:memory:`, zero-latency model); on the watched side each session has a `SessionWatch` with one
 * listener — what `GET /inspect/api/sessions/:id/stream` attaches for a page — and the clock stops
 * only once the watch has turned every step into messages (each actor's first whole, the next
 * ones as deltas) and handed them to the listener.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { createRuntime, sqliteStorage } from '../src/index.js';
import { InspectHub } from '../src/inspect/inspect-hub.js';
import { median, readTool, stepModel, trackedStorage } from './common.js';
import { compareSides, timeTurns, type Side } from './step-overhead.js';

export interface InspectOverheadOptions {
  toolSteps: number;
  turnsPerRep: number;
  warmupReps: number;
  reps: number;
}

function side(toolSteps: number, watched: boolean): Side & { bytes: number } {
  const result = {
    name: watched ? 'watched' : 'unwatched',
    bytes: 0,
    async rep(turns: number) {
      const storage = trackedStorage(sqliteStorage({ filename: ':memory:' }));
      const runtime = await createRuntime({ storage, model: stepModel(toolSteps), tools: [readTool()], agents: { default: { maxModelCalls: 50 } } });
      const hub = new InspectHub();
      const rep = await timeTurns(runtime, storage, turns, toolSteps, {
        opened: (session) => {
          if (watched) hub.watch(session).listen({ item: (sent) => (result.bytes += sent.json.length), end: () => undefined }, null);
        },
        // The watch converts what it recorded a macrotask later: that work is part of the watched step.
        settle: () => nextMacrotask(),
      });
      await runtime.shutdown();
      return rep;
    },
  };
  return result;
}

export interface InspectOverheadResult {
  unwatched: { median: number; samples: number[] };
  watched: { median: number; samples: number[] };
  /** Median of the per-round ratios (both sides back to back): the headline figure. */
  pairedRatio: number;
  ratio: number;
  /** Bytes of stream messages the watched side produced per model step. */
  bytesPerStep: number;
}

export async function measureInspectOverhead(options: InspectOverheadOptions): Promise<InspectOverheadResult> {
  const plain = side(options.toolSteps, false);
  const watched = side(options.toolSteps, true);
  const [a, b] = await compareSides([plain, watched], options);
  const steps = (options.warmupReps + options.reps) * options.turnsPerRep * (options.toolSteps + 1);
  return {
    unwatched: { median: a!.median, samples: a!.samples },
    watched: { median: b!.median, samples: b!.samples },
    pairedRatio: median(b!.samples.map((w, i) => w / a!.samples[i]!)),
    ratio: b!.median / a!.median,
    bytesPerStep: watched.bytes / steps,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await measureInspectOverhead({ toolSteps: 10, turnsPerRep: 20, warmupReps: 10, reps: 11 });
  console.log(`unwatched ${r.unwatched.median.toFixed(1)} µs/step, watched ${r.watched.median.toFixed(1)} µs/step`);
  console.log(`inspect_overhead_ratio: ${r.pairedRatio.toFixed(2)} (ratio of the medians ${r.ratio.toFixed(2)}; ${Math.round(r.bytesPerStep)} B of messages per step)`);
}
