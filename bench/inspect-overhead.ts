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

export interface WatchBufferResult {
  /** Heap a watch holds for its session once its replay buffer is full, in KiB: what the last page leaving gives back. */
  kibPerWatch: number;
  /** Messages in each watch's buffer when it was measured. */
  messages: number;
}

/**
 * The memory of a watch whose 2 000-message buffer is full: `sessions` sessions run turns of the
 * `inspect_overhead_ratio` workload while watched until each buffer is full, then the heap (after
 * a full collection) is read with the watches listening and again once every page has left (which
 * drops the watch, its buffer and its actors' bases). Needs `--expose-gc`.
 */
export async function measureWatchBuffer(sessions = 20, toolSteps = 10): Promise<WatchBufferResult> {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('measureWatchBuffer needs node --expose-gc');
  const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: stepModel(toolSteps), tools: [readTool()], agents: { default: { maxModelCalls: 50 } } });
  try {
    const hub = new InspectHub();
    const leave: (() => void)[] = [];
    let messages = 0;
    const handles = [];
    for (let i = 0; i < sessions; i++) {
      const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
      const watch = hub.watch(session);
      const listener = { item: () => (messages += 1), end: () => undefined };
      watch.listen(listener, null);
      leave.push(() => watch.unlisten(listener));
      handles.push(session);
    }
    // A turn makes some 260 messages: eight fill the buffer (and the runtime's own state settles as it does without a watch).
    for (let turn = 0; turn < 8; turn++) {
      for (const session of handles) {
        const started = await session.startTurn({ clientRequestId: `fill-${turn}`, input: [{ type: 'text', text: 'read the files' }] });
        if (!started.ok) throw new Error(`startTurn refused: ${JSON.stringify(started.error)}`);
        await session.waitForTurn(started.turnId);
      }
    }
    await nextMacrotask();
    collect();
    const watched = process.memoryUsage().heapUsed;
    // Emptied as they run: nothing here keeps a watch alive after its page left.
    for (const unlisten of leave.splice(0)) unlisten();
    // Collected in the same synchronous run as the calls above, the watches were still reachable
    // (3 KiB a watch was given back); after a yield, all of them are.
    await nextMacrotask();
    collect();
    const left = process.memoryUsage().heapUsed;
    return { kibPerWatch: (watched - left) / 1024 / sessions, messages: Math.min(messages / sessions, 2_000) };
  } finally {
    await runtime.shutdown();
  }
}

if (import.meta.url === `file://${process.argv[1]}` && process.argv[2] === 'buffer') {
  // `npm run bench` runs without --expose-gc: it starts this file so (`node --expose-gc inspect-overhead.js buffer`) and reads the line.
  console.log(JSON.stringify(await measureWatchBuffer()));
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await measureInspectOverhead({ toolSteps: 10, turnsPerRep: 20, warmupReps: 10, reps: 11 });
  console.log(`unwatched ${r.unwatched.median.toFixed(1)} µs/step, watched ${r.watched.median.toFixed(1)} µs/step`);
  console.log(`inspect_overhead_ratio: ${r.pairedRatio.toFixed(2)} (ratio of the medians ${r.ratio.toFixed(2)}; ${Math.round(r.bytesPerStep)} B of messages per step)`);
  if ((globalThis as { gc?: unknown }).gc) {
    const buffer = await measureWatchBuffer();
    console.log(`inspect_watch_kib: ${Math.round(buffer.kibPerWatch)} (heap of one watch with ${buffer.messages} messages buffered)`);
  } else console.log('inspect_watch_kib: not measured (run with node --expose-gc)');
}
