/**
 * `sse_5000_delta_p99_ms` and `sse_5000_rss_mb` (issue 28, item 4): one host holding 5 000 SSE
 * clients, one per session, while 1 000 of those sessions run turns at once and the other 4 000
 * sit idle with heartbeats.
 *
 * - Host: `startHost` in this process, SQLite `:memory:`, the `http.ts` model (zero latency, 3 text
 *   deltas per step, each stamped as it is yielded) and `bench_read` tool, `permissionMode: 'auto'`.
 *   The host's caps are raised for the bench only, as an operator would with `--max-sessions` and
 *   `--max-streams` (defaults 1 000 each); the per-principal quotas do not apply (no auth: the
 *   operator). Heartbeats every `heartbeatMs` (2 s here, 15 s by default) so that the idle streams
 *   beat several times within the run. A metrics listener, whose `turnchart_sse_clients` and
 *   `turnchart_sse_clients_dropped_total` say how many streams are open and how many were cut off
 *   for falling behind.
 * - Clients: `CLIENT_PROCESSES` processes (`sse-5000-client-process.ts`), each with a share of the
 *   sessions; each creates its sessions and connects an SSE client to every one (past its
 *   snapshot) before the clock starts, then its share of the active sessions runs `turnsPerSession`
 *   turns each (`POST …/turns` + `GET …?wait=60`), one after another per session, all sessions at once.
 *
 * Figures: the p99 of model → client latency over every text delta of the run (stamped as in
 * `http.ts`: `epochNow` in the model just before the yield, in the client as the event is parsed);
 * the host process's peak RSS (sampled every 100 ms from before the first session until the run
 * ends; this process holds nothing else of size, and `npm run bench` runs it in a child process of
 * its own so that earlier figures' garbage is not counted). Dropped: streams that ended before the
 * clients closed them (the host's count of lagged clients beside it); the figure needs 0.
 *
 * Alone: `npx tsx bench/sse-5000.ts [streams active turnsPerSession clientProcesses] [--split]` prints the
 * result as JSON.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { startHost } from '../src/host/host.js';
import { sqliteStorage } from '../src/index.js';
import { benchScript } from './child-script.js';
import { readTool } from './common.js';
import { epochNow } from './http-client.js';
import { BENCH_TOOL, DeltaProbe, probeModel, quantile, stampSocketWrites } from './http.js';
import type { StreamsReply, StreamsRequest, StreamsRunReply } from './sse-5000-client-process.js';

export interface Sse5000Options {
  streams: number;
  /** Sessions running turns at once; the rest only hold their streams. */
  active: number;
  turnsPerSession: number;
  toolSteps: number;
  clientProcesses: number;
  heartbeatMs: number;
  /**
   * Diagnostic, off in the figure: stamp each delta's socket write in the host (`stampSocketWrites`,
   * which decodes every chunk the host writes), to split the latency into the host's part and the rest.
   */
  split?: boolean;
}

export const SSE_5000: Sse5000Options = { streams: 5_000, active: 1_000, turnsPerSession: 2, toolSteps: 3, clientProcesses: 4, heartbeatMs: 2_000 };

export interface Sse5000Result {
  options: Sse5000Options;
  delta: { measured: number; stamped: number; unmatched: number; p50: number; p99: number; max: number };
  rssMb: { start: number; connected: number; peak: number; end: number };
  heapUsedMb: { start: number; connected: number; peak: number };
  /** With `split`: model → the host's socket write, and that write → the client's parse, ms. */
  split?: { toSocket: { p50: number; p99: number }; fromSocket: { p50: number; p99: number } };
  /** Event-loop delay of the host's process during the run, ms. */
  loopDelay: { p50: number; p99: number; max: number };
  turns: number;
  runSeconds: number;
  setupSeconds: number;
  turnsPerSecond: number;
  /** Streams open on the host after setup, and after the run (`turnchart_sse_clients`). */
  openStreams: { connected: number; afterRun: number };
  /** Streams that ended before the clients closed them, and the host's count of clients cut off for lagging. */
  dropped: number;
  lagged: number;
  idle: { streams: number; withHeartbeat: number; heartbeats: number };
  loadAverage: { start: number[]; end: number[] };
  cpus: number;
}

class StreamsClient {
  private readonly child: ChildProcess;

  constructor() {
    const script = benchScript('sse-5000-client-process');
    this.child = fork(script.file, [], { execArgv: script.execArgv });
  }

  ask<K extends StreamsRequest['kind']>(request: Extract<StreamsRequest, { kind: K }>): Promise<Extract<StreamsReply, { ok: true; kind: K }>> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`an SSE client process exited (${code})`));
      this.child.once('exit', onExit);
      this.child.once('message', (reply: StreamsReply) => {
        this.child.off('exit', onExit);
        if (reply.ok) resolve(reply as Extract<StreamsReply, { ok: true; kind: K }>);
        else reject(new Error(`SSE client: ${reply.message}`));
      });
      this.child.send(request);
    });
  }

  exit(): void {
    if (this.child.connected) this.child.send('exit');
  }
}

/** Splits `total` into `parts` shares that differ by at most one. */
function shares(total: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));
}

async function scrape(metricsUrl: string): Promise<{ open: number; dropped: number }> {
  const text = await (await fetch(metricsUrl)).text();
  const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { open: value('turnchart_sse_clients'), dropped: value('turnchart_sse_clients_dropped_total') };
}

export async function measureSse5000(options: Sse5000Options = SSE_5000): Promise<Sse5000Result> {
  const loadStart = loadavg();
  const mb = (bytes: number) => bytes / 1024 / 1024;
  const { rss: rssStart, heapUsed: heapStart } = process.memoryUsage();
  let rssPeak = rssStart;
  let heapPeak = 0;
  const sampler = setInterval(() => {
    const usage = process.memoryUsage();
    rssPeak = Math.max(rssPeak, usage.rss);
    heapPeak = Math.max(heapPeak, usage.heapUsed);
  }, 100);
  const workspace = mkdtempSync(join(tmpdir(), 'turnchart-sse5000-'));
  const probe = new DeltaProbe();
  const host = await startHost({
    host: '127.0.0.1',
    port: 0,
    workspace,
    model: probeModel(options.toolSteps, probe),
    idleTtlSeconds: 3_600,
    storage: sqliteStorage({ filename: ':memory:' }),
    maxSessions: options.streams,
    maxStreams: options.streams,
    metricsPort: 0,
    sse: { heartbeatMs: options.heartbeatMs },
    warn: () => undefined,
    runtime: { tools: [readTool(BENCH_TOOL)], agents: { default: { maxModelCalls: 50 } } },
  });
  const clients = Array.from({ length: options.clientProcesses }, () => new StreamsClient());
  // Before the streams open, so every stream's response is stamped.
  const unstamp = options.split ? stampSocketWrites(probe) : () => undefined;
  try {
    const setupStarted = performance.now();
    const counts = shares(options.streams, clients.length);
    const actives = shares(options.active, clients.length);
    await Promise.all(clients.map((client, i) => client.ask({ kind: 'setup', base: host.url, count: counts[i]!, concurrency: 16 })));
    const setupSeconds = (performance.now() - setupStarted) / 1000;
    const connected = await scrape(host.metricsUrl!);
    const usage = process.memoryUsage();
    const rssConnected = usage.rss;
    const heapConnected = usage.heapUsed;

    probe.recording = true;
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const replies: StreamsRunReply[] = await Promise.all(
      clients.map((client, i) => client.ask({ kind: 'run', active: actives[i]!, turnsPerSession: options.turnsPerSession })),
    );
    loop.disable();
    const finishedAt = epochNow();
    const afterRun = await scrape(host.metricsUrl!);
    const rssEnd = process.memoryUsage().rss;
    clearInterval(sampler);
    for (const reply of replies) for (const [sessionId, text, at] of reply.arrivals) probe.arrived(sessionId, text, at);
    probe.recording = false;
    const closed = await Promise.all(clients.map((client) => client.ask({ kind: 'close' })));
    const startedAt = Math.min(...replies.map((reply) => reply.startedAt));
    const runSeconds = (finishedAt - startedAt) / 1000;
    const turns = options.active * options.turnsPerSession;
    const lat = probe.latencies;
    return {
      options,
      delta: {
        measured: lat.length,
        stamped: probe.stamped,
        unmatched: probe.unmatched,
        p50: quantile(lat, 0.5),
        p99: quantile(lat, 0.99),
        max: lat.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY),
      },
      ...(options.split && {
        split: {
          toSocket: { p50: quantile(probe.toSocket, 0.5), p99: quantile(probe.toSocket, 0.99) },
          fromSocket: { p50: quantile(probe.fromSocket, 0.5), p99: quantile(probe.fromSocket, 0.99) },
        },
      }),
      rssMb: { start: mb(rssStart), connected: mb(rssConnected), peak: mb(Math.max(rssPeak, rssConnected, rssEnd)), end: mb(rssEnd) },
      heapUsedMb: { start: mb(heapStart), connected: mb(heapConnected), peak: mb(Math.max(heapPeak, heapConnected)) },
      loopDelay: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      turns,
      runSeconds,
      setupSeconds,
      turnsPerSecond: turns / runSeconds,
      openStreams: { connected: connected.open, afterRun: afterRun.open },
      dropped: closed.reduce((sum, reply) => sum + reply.dropped, 0),
      lagged: afterRun.dropped,
      idle: {
        streams: replies.reduce((sum, reply) => sum + reply.idle, 0),
        withHeartbeat: replies.reduce((sum, reply) => sum + reply.idleWithHeartbeat, 0),
        heartbeats: replies.reduce((sum, reply) => sum + reply.heartbeats, 0),
      },
      loadAverage: { start: loadStart, end: loadavg() },
      cpus: cpus().length,
    };
  } finally {
    unstamp();
    clearInterval(sampler);
    for (const client of clients) client.exit();
    await host.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

/**
 * Runs the figure in a child process of its own (`npm run bench`): the host's RSS is then its own,
 * not the suite's after every earlier figure, and the streams' sockets close with it.
 */
export function measureSse5000InChild(options: Sse5000Options = SSE_5000): Sse5000Result {
  const script = benchScript('sse-5000');
  const args = [options.streams, options.active, options.turnsPerSession, options.clientProcesses].map(String);
  const child = spawnSync(process.execPath, [...script.execArgv, script.file, ...args], { encoding: 'utf8', timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
  if (child.status !== 0) throw new Error(`the sse-5000 child failed (${child.status ?? child.signal}): ${child.stderr.slice(-2_000)}`);
  return JSON.parse(child.stdout) as Sse5000Result;
}

/** The report's section; answers the figures' `name: value` lines. */
export function reportSse5000(result: Sse5000Result, log: (line?: string) => void): string[] {
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const r0 = (x: number) => Math.round(x);
  const { options: o, delta, rssMb } = result;
  const kept = result.dropped === 0;
  const p99 = r2(delta.p99);
  const rss = r0(rssMb.peak);
  log(`[sse 5000] one host, ${o.streams} SSE clients (one per session) in ${o.clientProcesses} client processes; ${o.active} sessions run ${o.turnsPerSession} turns each` +
    ` of ${o.toolSteps} tool steps + final at once, the other ${o.streams - o.active} idle with a heartbeat every ${o.heartbeatMs / 1000} s`);
  log(`  ${result.turns} turns in ${r2(result.runSeconds)} s (${r2(result.turnsPerSecond)} turns/s); sessions and streams set up in ${r2(result.setupSeconds)} s;` +
    ` load average ${result.loadAverage.start.map((x) => x.toFixed(2)).join(' ')} → ${result.loadAverage.end.map((x) => x.toFixed(2)).join(' ')}`);
  log(`  delta latency over ${delta.measured} deltas (${delta.stamped} yielded, ${delta.unmatched} never seen): p50 ${r2(delta.p50)} ms, p99 ${p99} ms, max ${r2(delta.max)} ms` +
    ` — bar ≤ 100 ms: ${p99 <= 100 && delta.unmatched === 0 ? 'meets bar' : 'MISSES bar'}`);
  log(`  host RSS: ${r0(rssMb.start)} MB at start, ${r0(rssMb.connected)} MB with every stream connected, peak ${rss} MB — bar ≤ 1024 MB: ${rss <= 1_024 ? 'meets bar' : 'MISSES bar'}` +
    ` (heapUsed ${r0(result.heapUsedMb.start)} → ${r0(result.heapUsedMb.connected)} → peak ${r0(result.heapUsedMb.peak)} MB)`);
  log(`  streams open ${result.openStreams.connected} after setup, ${result.openStreams.afterRun} after the run; dropped ${result.dropped}, cut off for lagging ${result.lagged}` +
    ` — ${kept ? 'none dropped' : 'DROPPED CLIENTS'}; idle streams with a heartbeat during the run ${result.idle.withHeartbeat} of ${result.idle.streams}`);
  log(`  informational: the host's event-loop delay during the run p50/p99/max ${r2(result.loopDelay.p50)}/${r2(result.loopDelay.p99)}/${r2(result.loopDelay.max)} ms`);
  return [`sse_5000_delta_p99_ms: ${kept ? p99 : `${p99} (dropped ${result.dropped})`}`, `sse_5000_rss_mb: ${rss}`];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [streams = SSE_5000.streams, active = SSE_5000.active, turns = SSE_5000.turnsPerSession, processes = SSE_5000.clientProcesses] = process.argv
    .slice(2)
    .filter((arg) => !arg.startsWith('--'))
    .map(Number);
  const split = process.argv.includes('--split');
  const result = await measureSse5000({ ...SSE_5000, streams, active, turnsPerSession: turns, clientProcesses: processes, split });
  console.log(JSON.stringify(result, null, 1));
}
