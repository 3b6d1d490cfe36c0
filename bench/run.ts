/**
 * The turnchart benchmark suite (`npm run bench`). Prints a human-readable report with each
 * figure's bar, then exactly four machine-readable lines:
 *
 *   step_overhead_ratio: X          runtime ÷ bare-loop µs/step, median of per-round ratios   bar ≤ 2.0
 *   idle_session_bytes: X           JS heap per idle open session                    bar ≤ 51200
 *   concurrent_sessions_completed: X  of 1 000 concurrent 3-step turns               expect 1000
 *   delta_throughput_per_s: X       text deltas model → updates$ subscriber          bar ≥ 100000
 *   prepare_1000_messages_us: X     ContextEngine.prepare, 1 000-message conversation (median µs)
 *   prepare_10000_messages_us: X    the same at 10 000 messages: about 10× means linear
 *   cancel_p99_ms: X                cancelTurn → turn_finished, p99 over four waiting cases
 *
 * Memory needs `global.gc`: without it (the usual `tsx bench/run.ts`), that figure is measured in a
 * child `node --expose-gc --import tsx bench/memory.ts`, which also gives it a clean heap.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { round } from './common.js';
import { measureConcurrentSessions } from './concurrency.js';
import { measureIdleSessionMemory, type MemoryResult } from './memory.js';
import { measureStepOverhead } from './step-overhead.js';
import { measureDeltaThroughput } from './throughput.js';
import { measurePrepare } from './prepare.js';
import { measureCancelLatency } from './cancel.js';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(BENCH_DIR);

const IDLE_SESSIONS = 1_000;
const CONCURRENT_SESSIONS = 1_000;
const FLOOD_DELTAS = 200_000;
// The runtime's charts take a few thousand steps before V8 has optimized them; warm-up covers that, so
// the figure is the steady state a long-running host sees, not the first seconds after start.
const STEP = { toolSteps: 10, turnsPerRep: 20, warmupReps: 20, reps: 21, orchestrationReps: 7 };

function log(line = ''): void {
  console.log(line);
}

function verdict(ok: boolean): string {
  return ok ? 'meets bar' : 'MISSES bar';
}

function memoryInChild(count: number): MemoryResult {
  const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', join(BENCH_DIR, 'memory.ts'), String(count)], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (child.status !== 0) throw new Error(`memory child failed (${child.status ?? child.signal}): ${child.stderr}`);
  const line = child.stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(line) as MemoryResult;
}

async function main(): Promise<void> {
  const suiteStarted = performance.now();
  log(`turnchart bench — node ${process.version}, ${process.platform}/${process.arch}`);
  log();

  // 1. Memory first: in a clean child process unless this one already has gc.
  const hasGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
  const memory = hasGc ? await measureIdleSessionMemory(IDLE_SESSIONS) : memoryInChild(IDLE_SESSIONS);
  const idleBytes = round(memory.bytesPerSession);
  log(`[memory] ${memory.sessions} idle sessions on one runtime (sqlite :memory:), ${hasGc ? 'in process' : 'child node --expose-gc'}`);
  log(`  heapUsed delta ${round(memory.heapDeltaBytes / 1024)} KiB → ${idleBytes} B/session (${round(idleBytes / 1024, 1)} KiB)` +
    ` — bar ≤ 50 KB (51200 B): ${verdict(idleBytes <= 51_200)}`);
  log(`  informational: external delta ${round(memory.externalDeltaBytes / 1024)} KiB, rss delta ${round(memory.rssDeltaBytes / 1024)} KiB` +
    ` (sqlite pages live outside the JS heap); after one 3-step turn each: ${round(memory.bytesPerSessionAfterTurn)} B/session`);
  log();

  // 2. Runtime overhead per model step.
  const step = await measureStepOverhead(STEP);
  // Both sides of a round run back to back, so the per-round ratio cancels this machine's speed drift;
  // its median is the headline figure. The ratio of the two medians is printed beside it.
  const ratio = round(step.pairedRatio, 2);
  const samples = (xs: number[]) => xs.map((x) => round(x)).join(', ');
  log(`[step overhead] ${STEP.toolSteps} tool steps + final per turn, ${STEP.turnsPerRep} turns/rep, ${STEP.warmupReps} warm-up + ${STEP.reps} reps`);
  log(`  runtime  median ${round(step.runtime.median, 1)} µs/step  (samples ${samples(step.runtime.samples)})`);
  log(`  baseline median ${round(step.baseline.median, 1)} µs/step  (samples ${samples(step.baseline.samples)})`);
  log(`  median of the per-round ratios ${ratio}× — bar ≤ 2.0×: ${verdict(ratio <= 2)}`);
  log(`  informational: ratio of the medians ${round(step.ratio, 2)}×`);
  log(`  per turn: updates runtime ${step.runtime.updatesPerTurn} / baseline ${step.baseline.updatesPerTurn},` +
    ` storage writes runtime ${step.runtime.writesPerTurn} / baseline ${step.baseline.writesPerTurn}`);
  log(`  informational: baseline without trace-span writes ${round(step.baselineNoSpans.median, 1)} µs/step → ratio ${round(step.ratioNoSpans, 2)}×`);
  if (step.orchestration) {
    const o = step.orchestration;
    log(`  informational: null storage on both sides (orchestration only) runtime ${round(o.runtime.median, 1)} µs/step,` +
      ` baseline ${round(o.baseline.median, 1)} µs/step → ${round(o.ratio, 1)}×`);
  }
  log();

  // 3. Text-delta throughput.
  const flood = await measureDeltaThroughput(FLOOD_DELTAS);
  const perSecond = round(flood.perSecond);
  log(`[delta throughput] ${flood.deltas} text deltas, ${flood.received} received by an updates$ subscriber in ${round(flood.elapsedMs)} ms`);
  log(`  ${perSecond} deltas/s — bar ≥ 100000/s: ${verdict(perSecond >= 100_000)}`);
  log(`  informational: the bare model stream alone drains at ${round(flood.rawPerSecond)} deltas/s`);
  log();

  // 4. Concurrent sessions.
  const conc = await measureConcurrentSessions(CONCURRENT_SESSIONS, 2);
  log(`[concurrency] ${conc.sessions} sessions × (2 tool calls + final), all turns started, then all awaited`);
  log(`  completed ${conc.completed}/${conc.sessions} — expect ${conc.sessions}: ${verdict(conc.completed === conc.sessions)}`);
  if (conc.completed !== conc.sessions) log(`  not completed: ${JSON.stringify(conc.notCompleted)}`);
  log(`  informational: wall time ${round(conc.wallMs)} ms for all turns (${round(conc.wallMs / conc.sessions, 2)} ms/turn),` +
    ` session creation ${round(conc.createMs)} ms, trace signals dropped ${conc.droppedSignals}`);
  log();

  // 5. Request assembly.
  const assembly = measurePrepare();
  log('[prepare] ContextEngine.prepare on a conversation with 1/5 tool results, 1/10 of those over the pruning size');
  log(`  1 000 messages ${round(assembly.medianUs[1_000]!)} µs, 10 000 messages ${round(assembly.medianUs[10_000]!)} µs (medians)` +
    ` — growth ${round(assembly.growth, 1)}× for 10× the messages (linear ≈ 10)`);
  log();

  // 6. Cancel latency.
  const cancel = await measureCancelLatency();
  log('[cancel] cancelTurn → turn_finished, 50 turns per case');
  for (const [kind, q] of Object.entries(cancel.perCase)) log(`  ${kind.padEnd(20)} p50 ${round(q.p50, 2)} ms, p99 ${round(q.p99, 2)} ms`);
  log();
  log(`suite time ${round((performance.now() - suiteStarted) / 1000, 1)} s`);
  log();

  log(`step_overhead_ratio: ${ratio}`);
  log(`idle_session_bytes: ${idleBytes}`);
  log(`concurrent_sessions_completed: ${conc.completed}`);
  log(`delta_throughput_per_s: ${perSecond}`);
  log(`prepare_1000_messages_us: ${round(assembly.medianUs[1_000]!)}`);
  log(`prepare_10000_messages_us: ${round(assembly.medianUs[10_000]!)}`);
  log(`cancel_p99_ms: ${round(cancel.p99, 2)}`);
}

await main();
