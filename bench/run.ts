/**
 * The turnchart benchmark suite (`npm run bench`). Prints a human-readable report with each
 * figure's bar, then one machine-readable line per figure:
 *
 *   step_overhead_ratio: X          runtime ÷ bare-loop µs/step, median of per-round ratios   bar ≤ 2.0
 *   orchestration_ratio: X          the same with null storage on both sides (orchestration alone); issue 14's bar ≤ 8
 *   xstate_floor_ratio: X           (bare loop + two charts reduced to a step's events) ÷ bare loop: the least the line above could be
 *   inspect_overhead_ratio: X       µs/step with an inspector page's watch ÷ without, median of per-round ratios   bar ≤ 1.3
 *   inspect_watch_kib: X            heap one watch holds with its 2 000-message buffer full                     informational
 *   metrics_overhead_ratio: X       µs/step with a SpanMetrics observer (Prometheus) ÷ without, median of per-round ratios   bar ≤ 1.1
 *   otel_overhead_ratio: X          µs/step with an OtelSpans observer on the OpenTelemetry SDK's tracer (batch processor,
 *                                   in-memory exporter), content off ÷ without, median of per-round ratios   bar ≤ 1.3
 *   otel_content_overhead_ratio: X  the same with recordContent: true (informational)
 *   idle_session_bytes: X           JS heap per idle open session                    bar ≤ 51200
 *   concurrent_sessions_completed: X  of 1 000 concurrent 3-step turns               expect 1000
 *   delta_throughput_per_s: X       text deltas model → updates$ subscriber          bar ≥ 100000
 *   prepare_1000_messages_us: X     ContextEngine.prepare, 1 000-message conversation (median µs)
 *   prepare_10000_messages_us: X    the same at 10 000 messages: about 10× means linear
 *                                   (the same conversation array prepared again, as every model step does)
 *   world_state_sample_us: X        one world-state sample (CW-2: a workspace with AGENTS.md, 10 skills) while
 *                                   nothing changed, median µs (informational)
 *   world_state_reread_ratio: X     a sample right after the files changed (every read made) ÷ that (informational)
 *   cancel_p99_ms: X                cancelTurn → turn_finished, p99 over five waiting cases
 *   parallel_tools_speedup: X       one turn of 8 reads of 20 ms: serial ÷ parallel wall time    bar ≥ 3
 *   parallel_writes_speedup: X      the same with 8 writes (`auto`: no approvals), issue 30       bar ≥ 3
 *   parallel_approved_writes_speedup: X  8 writes in `ask`, each approved as asked: an approval batch (issue 30)  bar ≥ 3
 *   mcp_call_overhead_ratio: X      µs per tool step calling server-everything's echo over stdio ÷ the same
 *                                   step calling a native echo, median of per-round ratios (informational)
 *   http_turns_ratio: X             turns/s through the HTTP API (50 sessions, an SSE client each)
 *                                   ÷ turns/s of the same workload in process, ratio of the medians   bar ≥ 0.7 (issue 28)
 *   sse_delta_p99_ms: X             text delta yielded by the model → its SSE event parsed by the
 *                                   client, p99 under that HTTP load (client in its own process) bar ≤ 50
 *   http_loop_delay_p99_ms: X       the host's event-loop delay (a 1 ms timer's lateness), p99 over the
 *                                   timed HTTP rounds (issue 28)
 *   sse_5000_delta_p99_ms: X        one host with 5 000 SSE clients (one per session, clients in 4
 *                                   processes), 1 000 sessions running turns at once: text delta →
 *                                   client, p99; with the count of dropped clients if any   bar ≤ 100
 *   sse_5000_rss_mb: X              that host's peak RSS (a child process of its own)   bar ≤ 1024
 *   auth_overhead_ratio: X          host CPU per HTTP turn with HS256 JWTs (a token per user, cached)
 *                                   ÷ with the shared token, median of per-batch ratios          bar ≤ 1.1
 *   auth_overhead_uncached_ratio: X the same with a token never seen before on every request (informational)
 *   cluster_routed_ratio: X         a GET routed by another host of a cluster (RabbitMQ request/reply)
 *                                   ÷ the same GET on the session's owner, median of per-round ratios
 *                                   (informational; skipped without PostgreSQL and RabbitMQ)
 *   cluster_chat_routed_ratio: X    the same for POST /api/chat sending a finished turn's message again
 *                                   (tap on the broker, routed submit and reads, replay from storage)
 *   pg_round_trips_per_step: X      PostgreSQL statements per model step: (a 10-tool-step turn − an
 *                                   answer-only turn) ÷ 10, trace writes included; spec floor 2   bar ≤ 2.5
 *                                   (skipped without PostgreSQL)
 *   pg_commit_us: X                 one committed one-row insert on that PostgreSQL (a tool step waits for two)
 *   pg_two_commits_over_sqlite_step: X  twice that ÷ the runtime's SQLite step: the least PostgreSQL ÷ SQLite could be
 *   pg_commit_after_work_us: X      the same insert after 300 µs of the main thread's work, as within a step (informational)
 *   pg_step_us, sqlite_step_us: X   the peers bench's workload (a fresh session per turn, 9 tool steps + the answer)
 *                                   on each storage in one process, median µs per model step (issue 28)
 *   pg_step_over_floor: X           pg_step_us ÷ (sqlite_step_us + 2 × pg_commit_us of the same run)   bar ≤ 1.3
 *   pg_turns_per_s_200: X           200 sessions each running a turn of 3 tool steps + the answer at once,
 *   sqlite_turns_per_s_200: X       turns/s on PostgreSQL (group commit) and SQLite :memory:   bar PG ≥ 0.8 × SQLite
 *   pg_commits_per_step_200: X      transactions the PostgreSQL side committed per model step under that load
 *   host_rss_growth_mb_per_1000_sessions: X  host RSS (end − start) over 10 000 sessions served one
 *                                   after another with idleTtlSeconds 0, per 1 000 sessions     bar ≤ 5
 *   tasks_per_s_1_worker: X         tasks submitted at once → all closed, one worker process (median)
 *   tasks_per_s_2_workers: X        the same with two worker processes
 *   task_recovery_p50_ms: X         a worker SIGKILLed → each of its tasks recovered_from_checkpoint
 *   task_recovery_max_ms: X         on the other worker (p50 and max); the task figures need
 *                                   PostgreSQL and RabbitMQ and print n/a without them
 *   failover_p50_ms: X              a turn running on a SIGKILLed host of a 3-host cluster (--lease-ttl 5)
 *   failover_p99_ms: X              → its next update on a client's SSE stream through another host
 *                                   bar p99 ≤ lease-ttl + 2 s (7000)
 *   turns_lost_to_crashes: X        of those turns, the ones that did not end completed   bar 0
 *
 * Memory needs `global.gc`: without it (as `npm run bench` runs), that figure is measured in a child
 * `node --expose-gc` running `memory`, which also gives it a clean heap. The host's
 * memory is always measured in a child (`bench/host-memory.ts`), with this process as its HTTP client.
 */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { round } from './common.js';
import { measureConcurrentSessions } from './concurrency.js';
import { measureIdleSessionMemory, type MemoryResult } from './memory.js';
import { measureStepOverhead } from './step-overhead.js';
import { measureInspectOverhead, measureWatchBuffer, type WatchBufferResult } from './inspect-overhead.js';
import { measureTelemetryOverhead, type TelemetryOverheadPair } from './telemetry-overhead.js';
import { measureDeltaThroughput } from './throughput.js';
import { measurePrepare } from './prepare.js';
import { measureWorldState } from './world-state.js';
import { measureCancelLatency } from './cancel.js';
import { measureParallelTools } from './parallel-tools.js';
import { measureMcpOverhead, reportMcpOverhead } from './mcp-overhead.js';
import { measureHttpTurns } from './http.js';
import { measureSse5000InChild, reportSse5000 } from './sse-5000.js';
import { measureAuthOverhead, reportAuthOverhead } from './auth-overhead.js';
import { measureHostMemory } from './host-memory.js';
import { measureClusterRouting } from './cluster.js';
import { measurePgRoundTrips } from './pg-round-trips.js';
import { reportTasks } from './tasks.js';
import { reportFailover } from './failover.js';
import { measureXstateFloor } from './xstate-floor.js';
import { measurePgStep } from './pg-step.js';
import { measureManySessions } from './many-sessions.js';
import { measurePgCommit, WORK_BETWEEN_US } from './pg-commit.js';
import { benchScript } from './child-script.js';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(BENCH_DIR);

const IDLE_SESSIONS = 1_000;
const CONCURRENT_SESSIONS = 1_000;
const FLOOD_DELTAS = 200_000;
// The runtime's charts take a few thousand steps before V8 has optimized them; warm-up covers that, so
// the figure is the steady state a long-running host sees, not the first seconds after start.
const STEP = { toolSteps: 10, turnsPerRep: 20, warmupReps: 20, reps: 21, orchestrationReps: 7 };
const FLOOR = { toolSteps: 10, turnsPerRep: 20, warmupReps: 10, reps: 11 };
const INSPECT = { toolSteps: 10, turnsPerRep: 20, warmupReps: 10, reps: 11 };
// Three pairs of sides; the overheads are a few per cent, so more rounds than [inspect overhead] for a steady median.
const TELEMETRY = { toolSteps: 10, turnsPerRep: 20, warmupReps: 10, reps: 21 };
const CLUSTER = { requests: 200, chatRequests: 50, warmupRounds: 1, rounds: 5 };
const PG_ROUND_TRIPS = { turns: 5 };
const HTTP = { sessions: 50, turnsPerSession: 4, toolSteps: 3, warmupRounds: 2, rounds: 5 };
// A database file, as `npm start` runs: the figure is what the host keeps, not the rows it stored
// (with SQLite :memory: the stored rows are pages inside the host's RSS — about 4.6 MB per 1 000 sessions).
const HOST_MEMORY = { warmup: 1_000, sessions: 10_000, sampleEvery: 2_000, fileDb: true };

function log(line = ''): void {
  console.log(line);
}

function verdict(ok: boolean): string {
  return ok ? 'meets bar' : 'MISSES bar';
}

/** A figure measured in a child `node --expose-gc` running bench script `name`, read from the JSON of its last line. */
function jsonFromChild<T>(name: string, args: string[]): T {
  const script = benchScript(name);
  const child = spawnSync(process.execPath, ['--expose-gc', ...script.execArgv, script.file, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (child.status !== 0) throw new Error(`${name} child failed (${child.status ?? child.signal}): ${child.stderr}`);
  const line = child.stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(line) as T;
}

async function main(): Promise<void> {
  const suiteStarted = performance.now();
  log(`turnchart bench — node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} CPUs, load average ${loadAverage()}`);
  log();

  // 1. Memory first: in a clean child process unless this one already has gc.
  const hasGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
  const memory = hasGc ? await measureIdleSessionMemory(IDLE_SESSIONS) : jsonFromChild<MemoryResult>('memory', [String(IDLE_SESSIONS)]);
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

  // 2a. What XState alone costs for a step's events, against the same bare loop.
  const floor = await measureXstateFloor(FLOOR);
  const floorRatio = round(floor.ratio, 1);
  log(`[xstate floor] two charts reduced to a step's events (5 effect replies, a tool-call child actor started and done), nothing of turnchart in them`);
  log(`  reduced charts ${round(floor.chartsUs, 1)} µs/step, bare loop (null storage) ${round(floor.bareUs, 1)} µs/step in the same run`);
  log(`  (bare loop + reduced charts) ÷ bare loop = ${floorRatio}×: the least orchestration_ratio could be with one child actor per tool call (informational)`);
  log();

  // 2b. A session an inspector page watches, against the same session unwatched.
  const inspect = await measureInspectOverhead(INSPECT);
  const inspectRatio = round(inspect.pairedRatio, 2);
  log(`[inspect overhead] the [step overhead] runtime workload with and without an inspector watch on each session, ${INSPECT.warmupReps} warm-up + ${INSPECT.reps} reps`);
  log(`  unwatched median ${round(inspect.unwatched.median, 1)} µs/step  (samples ${samples(inspect.unwatched.samples)})`);
  log(`  watched   median ${round(inspect.watched.median, 1)} µs/step  (samples ${samples(inspect.watched.samples)})`);
  log(`  median of the per-round ratios ${inspectRatio}× — bar ≤ 1.3×: ${verdict(inspectRatio <= 1.3)}`);
  log(`  informational: ratio of the medians ${round(inspect.ratio, 2)}×; ${round(inspect.bytesPerStep)} B of stream messages per model step`);
  const watchBuffer = hasGc ? await measureWatchBuffer() : jsonFromChild<WatchBufferResult>('inspect-overhead', ['buffer']);
  const watchKib = round(watchBuffer.kibPerWatch);
  log(`  a watch with its buffer full (${watchBuffer.messages} messages) holds ${watchKib} KiB of heap, given back when its last page leaves (informational)`);
  log();

  // 2c. Issue 27's span observers: Prometheus metrics and OpenTelemetry spans, each against the same runtime without.
  const telemetry = await measureTelemetryOverhead(TELEMETRY);
  const metricsRatio = round(telemetry.metrics.pairedRatio, 2);
  const otelRatio = 'skipped' in telemetry.otel ? null : round(telemetry.otel.pair.pairedRatio, 2);
  const otelContentRatio = 'skipped' in telemetry.otel ? null : round(telemetry.otel.content.pairedRatio, 2);
  const telemetryPair = (label: string, p: TelemetryOverheadPair) =>
    `  ${label} plain ${round(p.plain.median, 1)} µs/step, observed ${round(p.observed.median, 1)} µs/step  (samples ${samples(p.observed.samples)})`;
  log(`[telemetry overhead] the [step overhead] runtime workload with and without a span observer, one pair of sides per observer, ${TELEMETRY.warmupReps} warm-up + ${TELEMETRY.reps} reps each`);
  log(telemetryPair('SpanMetrics              ', telemetry.metrics));
  log(`    median of the per-round ratios ${metricsRatio}× — bar ≤ 1.1×: ${verdict(metricsRatio <= 1.1)}`);
  if ('skipped' in telemetry.otel) log(`  OtelSpans skipped — ${telemetry.otel.skipped}`);
  else {
    const { pair, content } = telemetry.otel;
    log(telemetryPair('OtelSpans                ', pair));
    log(`    median of the per-round ratios ${otelRatio}× — bar ≤ 1.3×: ${verdict(otelRatio !== null && otelRatio <= 1.3)}`);
    log(telemetryPair('OtelSpans, recordContent ', content));
    log(`    median of the per-round ratios ${otelContentRatio}× (informational)`);
    log(`  informational: ratios of the medians ${round(telemetry.metrics.ratio, 2)}× / ${round(pair.ratio, 2)}× / ${round(content.ratio, 2)}×;` +
      ` SDK BasicTracerProvider + BatchSpanProcessor, ${round(telemetry.otel.exportedPerStep, 2)} spans exported per model step, flushed before the clock stops`);
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
  log(`  informational: the first call on a new array of the same items (the whole copy built) ${round(assembly.rebuildUs[1_000]!)} µs and` +
    ` ${round(assembly.rebuildUs[10_000]!)} µs`);
  const world = await measureWorldState();
  log('[world state] one sample before a model call: a workspace of 20 entries with AGENTS.md, 10 skills');
  log(`  nothing changed ${round(world.settledUs)} µs; right after a change (every file and listing read) ${round(world.changedUs)} µs (medians)`);
  log();

  // 6. Cancel latency.
  const cancel = await measureCancelLatency();
  log('[cancel] cancelTurn → turn_finished, 50 turns per case');
  for (const [kind, q] of Object.entries(cancel.perCase)) log(`  ${kind.padEnd(20)} p50 ${round(q.p50, 2)} ms, p99 ${round(q.p99, 2)} ms`);
  log();

  // 6b. Parallel reads.
  const parallel = await measureParallelTools();
  log('[parallel tools] one turn whose response asks for 8 reads of 20 ms: serial (default) vs parallelToolCalls (at most 4 at once)');
  log(`  serial ${round(parallel.serialMs, 1)} ms, parallel ${round(parallel.parallelMs, 1)} ms (medians of 9) → ${round(parallel.speedup, 2)}× — bar ≥ 3: ${verdict(parallel.speedup >= 3)}`);
  const parallelWrites = await measureParallelTools(9, 'slow_write');
  log('[parallel writes] the same with 8 writes of 20 ms, permissionMode auto (issue 30: writes and commands that need no approval run side by side too)');
  log(`  serial ${round(parallelWrites.serialMs, 1)} ms, parallel ${round(parallelWrites.parallelMs, 1)} ms (medians of 9) → ${round(parallelWrites.speedup, 2)}× — bar ≥ 3: ${verdict(parallelWrites.speedup >= 3)}`);
  const approvedWrites = await measureParallelTools(9, 'approved_writes');
  log('[approval batch] 8 writes of 20 ms in permissionMode ask, each approved as soon as it is asked (issue 30: every approval first, each call starting as approved)');
  log(`  serial ${round(approvedWrites.serialMs, 1)} ms, parallel ${round(approvedWrites.parallelMs, 1)} ms (medians of 9) → ${round(approvedWrites.speedup, 2)}× — bar ≥ 3: ${verdict(approvedWrites.speedup >= 3)}`);
  log();

  // 6c. An MCP server's tool against a native one.
  const mcp = await measureMcpOverhead();
  reportMcpOverhead(mcp, log);
  log();

  // 7. The HTTP API against the same workload in process, and SSE delta latency under that load.
  const httpStarted = performance.now();
  const web = await measureHttpTurns(HTTP);
  const httpSeconds = round((performance.now() - httpStarted) / 1000, 1);
  const httpRatio = round(web.ratio, 2);
  const ms = (x: number) => round(x, 2);
  log(`[http] ${HTTP.sessions} sessions at once, ${HTTP.turnsPerSession} turns each of ${HTTP.toolSteps} tool steps + final, ${HTTP.warmupRounds} warm-up + ${HTTP.rounds} rounds per side`);
  log('  through the API: POST turn + GET ?wait per turn, one SSE client per session (node:http, in a client process of its own);' +
    ' in process: startTurn + waitForTurn, one updates$ subscriber per session');
  log(`  HTTP        median ${round(web.http.median, 1)} turns/s  (samples ${samples(web.http.samples)})`);
  log(`  in process  median ${round(web.inProcess.median, 1)} turns/s  (samples ${samples(web.inProcess.samples)})`);
  log(`  ratio of the medians ${httpRatio} — bar ≥ 0.7: ${verdict(httpRatio >= 0.7)}`);
  log(`  informational: ${httpSeconds} s for [http] and [sse latency]; median of the per-round ratios ${round(web.pairedRatio, 2)};` +
    ` event-loop delay p50/p99 HTTP ${ms(web.loopDelay.http.p50)}/${ms(web.loopDelay.http.p99)} ms,` +
    ` in process ${ms(web.loopDelay.inProcess.p50)}/${ms(web.loopDelay.inProcess.p99)} ms`);
  log();
  const sseP99 = ms(web.delta.p99);
  log(`[sse latency] text delta yielded by the model → its SSE event parsed by the client, under the [http] load`);
  log(`  ${web.delta.measured} deltas measured (${web.delta.stamped} yielded, ${web.delta.unmatched} never seen) over the timed HTTP rounds`);
  log(`  p50 ${ms(web.delta.p50)} ms, p99 ${sseP99} ms, max ${ms(web.delta.max)} ms — bar ≤ 50 ms: ${verdict(sseP99 <= 50)}`);
  log(`  informational: in process (model → updates$ subscriber) p50 ${round(web.inProcessDelta.p50, 4)} ms, p99 ${round(web.inProcessDelta.p99, 4)} ms`);
  const split = web.split;
  log(`  informational: one more HTTP round with the host's socket writes stamped (${split.measured} deltas):` +
    ` model → socket write p50 ${ms(split.toSocket.p50)} / p99 ${ms(split.toSocket.p99)} ms,` +
    ` socket write → client callback p50 ${ms(split.fromSocket.p50)} / p99 ${ms(split.fromSocket.p99)} ms`);
  log();

  // 7a. Issue 28: 5 000 live streams on one host, 1 000 of them running turns (a child process of its own).
  const sse5000Lines = reportSse5000(measureSse5000InChild(), log);
  log();

  // 7b. What verifying a JWT on every request costs an HTTP turn, against the shared token.
  const auth = await measureAuthOverhead();
  reportAuthOverhead(auth, log);
  log();

  // 8. Host memory over many sessions, in a child process.
  const memoryStarted = performance.now();
  const hostMemory = await measureHostMemory(HOST_MEMORY);
  const memorySeconds = round((performance.now() - memoryStarted) / 1000, 1);
  const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);
  const rssGrowth = round(hostMemory.rssMbPer1000, 2);
  const { start, end } = hostMemory;
  log(`[host memory] ${hostMemory.sessions} sessions served one after another through the API after ${hostMemory.warmup} warm-up sessions` +
    ' (create, one turn of 1 tool step + answer, wait), idleTtlSeconds 0, a SQLite file (the host default)');
  log('  host in a child node --expose-gc; HTTP client in this process; gc() ×4 once no session is open, before each reading');
  log(`  start rss ${mb(start.rss)} MB, heapUsed ${mb(start.heapUsed)} MB; end rss ${mb(end.rss)} MB, heapUsed ${mb(end.heapUsed)} MB;` +
    ` open sessions at the end ${end.openSessions}; turns not completed ${hostMemory.failures}`);
  log(`  RSS growth ${rssGrowth} MB per 1000 sessions — bar ≤ 5 MB: ${verdict(rssGrowth <= 5)}`);
  log(`  informational: least-squares slope of RSS over the readings ${round(hostMemory.rssSlopeMbPer1000, 2)} MB per 1000 sessions;` +
    ` heapUsed growth ${round(hostMemory.heapMbPer1000, 3)} MB per 1000 sessions;` +
    ` the database (on disk, not in RSS) grew ${round(hostMemory.sqliteMbPer1000, 2)} MB per 1000 (${mb(start.sqliteBytes)} → ${mb(end.sqliteBytes)} MB)`);
  log(`  informational: readings (sessions → rss / heapUsed / database MB): ${hostMemory.samples
    .map((s) => `${s.served} → ${mb(s.rss)}/${mb(s.heapUsed)}/${mb(s.sqliteBytes)}`)
    .join(', ')}; ${round(hostMemory.wallMs / 1000, 1)} s for the ${hostMemory.sessions} sessions, ${memorySeconds} s in all`);
  log();

  const cluster = await measureClusterRouting(CLUSTER);
  const clusterRatio = 'skipped' in cluster ? null : round(cluster.ratio, 2);
  const chatRatio = 'skipped' in cluster ? null : round(cluster.chat.ratio, 2);
  if ('skipped' in cluster) log(`[cluster] skipped — ${cluster.skipped}`);
  else {
    log(`[cluster] two in-process hosts on one PostgreSQL schema and RabbitMQ; GET a finished turn, ${cluster.requestsPerRound} sequential requests per side per round, ${CLUSTER.warmupRounds} warm-up + ${CLUSTER.rounds} rounds`);
    log(`  on the owner      median ${round(cluster.localUs.median)} µs/request  (samples ${samples(cluster.localUs.samples)})`);
    log(`  routed to it      median ${round(cluster.routedUs.median)} µs/request  (samples ${samples(cluster.routedUs.samples)})`);
    log(`  median of the per-round ratios ${clusterRatio}× (informational: the routed path adds a lease lookup and a broker round trip)`);
    const { chat } = cluster;
    log(`  POST /api/chat with a finished turn's message sent again, ${chat.requestsPerRound} sequential requests per side per round, whole stream read`);
    log(`  on the owner      median ${round(chat.localUs.median)} µs/request  (samples ${samples(chat.localUs.samples)})`);
    log(`  on the other host median ${round(chat.routedUs.median)} µs/request  (samples ${samples(chat.routedUs.samples)})`);
    log(`  median of the per-round ratios ${chatRatio}× (informational: a binding on the updates exchange and four routed commands)`);
  }
  log();

  // 8c. Statements a step sends to PostgreSQL: each is a round trip there.
  const trips = await measurePgRoundTrips(PG_ROUND_TRIPS.turns);
  let tripsPerStep: number | null = null;
  if ('skipped' in trips) log(`[pg round trips] skipped — ${trips.skipped}`);
  else {
    tripsPerStep = round(trips.perStep, 2);
    const counts = (c: typeof trips.tenSteps) => `${c.total} (messages ${c.messages}, span batches ${c.spans}, other ${c.other})`;
    log(`[pg round trips] statements sent to PostgreSQL per turn, from startTurn until the trace queue is flushed, median of ${trips.turns} turns of each kind, one fresh schema, a fresh session per turn`);
    log(`  ${trips.toolSteps} tool steps + answer ${counts(trips.tenSteps)}; answer only ${counts(trips.zeroSteps)}; createSession ${trips.createSession}`);
    log(`  ${tripsPerStep} statements per step — spec floor 2 (assistant message, tool result), bar ≤ 2.5: ${verdict(tripsPerStep <= 2.5)}`);
  }
  log();
  // 8d. One durable write on that PostgreSQL: a tool step waits for two.
  const commit = await measurePgCommit();
  let commitUs: number | null = null;
  let commitFloor: number | null = null;
  if ('skipped' in commit) log(`[pg commit] skipped — ${commit.skipped}`);
  else {
    commitUs = round(commit.commitUs);
    commitFloor = round((2 * commit.commitUs) / step.runtime.median, 2);
    log(`[pg commit] a one-row insert committed on its own (synchronous_commit ${commit.synchronousCommit}, wal_sync_method ${commit.walSyncMethod}), median of 400`);
    log(`  ${commitUs} µs a commit; a tool step waits for two (RT-12): ${round(2 * commit.commitUs)} µs = ${commitFloor}× the runtime's SQLite step of this run (informational)`);
    log(`  the same insert after ${WORK_BETWEEN_US} µs of the main thread's work, as within a step: ${round(commit.commitAfterWorkUs)} µs (informational; back to back the server's processes are still running)`);
  }
  log();
  // 8e. Issue 28: a PostgreSQL step against its floor, and many sessions sharing one database.
  const pgStep = await measurePgStep();
  if ('skipped' in pgStep) log(`[pg step] skipped — ${pgStep.skipped}`);
  else {
    log(`[pg step] the peers bench's workload (a fresh session per turn, 9 tool steps + the answer), ${pgStep.turnsPerRound} turns a round, ${pgStep.rounds} rounds per storage, alternating`);
    log(`  SQLite :memory: median ${round(pgStep.sqliteUs)} µs/step (samples ${samples(pgStep.samples.sqlite)})`);
    log(`  PostgreSQL      median ${round(pgStep.postgresUs)} µs/step (samples ${samples(pgStep.samples.postgres)}); ${round(pgStep.commitsPerStep, 2)} commits a step`);
    log(`  where a PostgreSQL step goes (passes with every statement timed, ${round(pgStep.instrumentedUs)} µs/step): ${round(pgStep.inStatementsUs)} µs with a statement outstanding, ${round(pgStep.instrumentedUs - pgStep.inStatementsUs)} µs the process's own work;` +
      ` by statement (per step: count, µs) ${Object.entries(pgStep.statements).map(([kind, { perStep, usPerStep }]) => `${kind} ${round(perStep, 2)}/${round(usPerStep)}`).join(', ')}`);
    log(`  floor = SQLite step + 2 × ${round(pgStep.commitUs)} µs commit = ${round(pgStep.sqliteUs + 2 * pgStep.commitUs)} µs; PostgreSQL step ÷ floor ${round(pgStep.overFloor, 2)} — bar ≤ 1.3: ${verdict(pgStep.overFloor <= 1.3)}`);
  }
  log();
  const many = await measureManySessions();
  if ('skipped' in many) log(`[many sessions] skipped — ${many.skipped}`);
  else {
    const share = many.turnsPerS.postgres / many.turnsPerS.sqlite;
    log(`[many sessions] ${many.sessions} sessions each running a turn of 3 tool steps + the answer at once, ${many.rounds} rounds per side, alternating`);
    log(`  SQLite :memory:             median ${round(many.turnsPerS.sqlite)} turns/s (samples ${samples(many.samples.sqlite)})`);
    log(`  PostgreSQL, group commit    median ${round(many.turnsPerS.postgres)} turns/s (samples ${samples(many.samples.postgres)}); per step ${round(many.statementsPerStep, 2)} statements, ${round(many.commitsPerStep, 2)} commits`);
    log(`  PostgreSQL, one write each  median ${round(many.turnsPerS.postgres_single)} turns/s (samples ${samples(many.samples.postgres_single)}); per step ${round(many.singleStatementsPerStep, 2)} statements, ${round(many.singleCommitsPerStep, 2)} commits (informational)`);
    log(`  PostgreSQL ÷ SQLite ${round(share, 2)} — bar ≥ 0.8: ${verdict(share >= 0.8)}`);
  }
  log();
  // 9. Tasks over RabbitMQ: throughput with one and two workers, and recovery after a SIGKILL.
  const taskLines = await reportTasks(log);
  // 10. Issue 26: a turn on a host SIGKILLed, picked up by another host of the cluster.
  const failoverLines = await reportFailover(log);
  log(`suite time ${round((performance.now() - suiteStarted) / 1000, 1)} s, load average ${loadAverage()}`);
  log();

  log(`step_overhead_ratio: ${ratio}`);
  log(`orchestration_ratio: ${step.orchestration ? round(step.orchestration.ratio, 1) : 'skipped'}`);
  log(`xstate_floor_ratio: ${floorRatio}`);
  log(`inspect_overhead_ratio: ${inspectRatio}`);
  log(`inspect_watch_kib: ${watchKib}`);
  log(`metrics_overhead_ratio: ${metricsRatio}`);
  log(`otel_overhead_ratio: ${otelRatio ?? 'skipped'}`);
  log(`otel_content_overhead_ratio: ${otelContentRatio ?? 'skipped'}`);
  log(`idle_session_bytes: ${idleBytes}`);
  log(`concurrent_sessions_completed: ${conc.completed}`);
  log(`delta_throughput_per_s: ${perSecond}`);
  log(`prepare_1000_messages_us: ${round(assembly.medianUs[1_000]!)}`);
  log(`prepare_10000_messages_us: ${round(assembly.medianUs[10_000]!)}`);
  log(`world_state_sample_us: ${round(world.settledUs)}`);
  log(`world_state_reread_ratio: ${round(world.ratio, 1)}`);
  log(`cancel_p99_ms: ${round(cancel.p99, 2)}`);
  log(`parallel_tools_speedup: ${round(parallel.speedup, 2)}`);
  log(`parallel_writes_speedup: ${round(parallelWrites.speedup, 2)}`);
  log(`parallel_approved_writes_speedup: ${round(approvedWrites.speedup, 2)}`);
  log(`mcp_call_overhead_ratio: ${round(mcp.pairedRatio, 2)}`);
  log(`http_turns_ratio: ${httpRatio}`);
  log(`sse_delta_p99_ms: ${sseP99}`);
  log(`http_loop_delay_p99_ms: ${ms(web.loopDelay.http.p99)}`);
  for (const line of sse5000Lines) log(line);
  log(`auth_overhead_ratio: ${round(auth.cpu.ratio, 2)}`);
  log(`auth_overhead_uncached_ratio: ${round(auth.cpu.uncachedRatio, 2)}`);
  log(`host_rss_growth_mb_per_1000_sessions: ${rssGrowth}`);
  log(`cluster_routed_ratio: ${clusterRatio ?? 'skipped'}`);
  log(`cluster_chat_routed_ratio: ${chatRatio ?? 'skipped'}`);
  log(`pg_round_trips_per_step: ${tripsPerStep ?? 'skipped'}`);
  log(`pg_commit_us: ${commitUs ?? 'skipped'}`);
  log(`pg_two_commits_over_sqlite_step: ${commitFloor ?? 'skipped'}`);
  log(`pg_commit_after_work_us: ${'skipped' in commit ? 'skipped' : round(commit.commitAfterWorkUs)}`);
  log(`pg_step_us: ${'skipped' in pgStep ? 'skipped' : round(pgStep.postgresUs)}`);
  log(`sqlite_step_us: ${'skipped' in pgStep ? 'skipped' : round(pgStep.sqliteUs)}`);
  log(`pg_step_over_floor: ${'skipped' in pgStep ? 'skipped' : round(pgStep.overFloor, 2)}`);
  log(`pg_turns_per_s_200: ${'skipped' in many ? 'skipped' : round(many.turnsPerS.postgres)}`);
  log(`sqlite_turns_per_s_200: ${'skipped' in many ? 'skipped' : round(many.turnsPerS.sqlite)}`);
  log(`pg_commits_per_step_200: ${'skipped' in many ? 'skipped' : round(many.commitsPerStep, 2)}`);
  for (const line of taskLines) log(line);
  for (const line of failoverLines) log(line);
}

/** Other work on the machine skews every timed figure; the report says how busy it was. */
function loadAverage(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}

await main();
