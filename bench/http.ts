/**
 * `http_turns_ratio` and `sse_delta_p99_ms`: the same workload driven through the HTTP API and
 * in process, in the same run.
 *
 * Workload: `sessions` sessions at once, each running `turnsPerSession` turns one after another;
 * each turn is `toolSteps` tool steps + a final answer from a zero-latency model that streams
 * `DELTAS_PER_STEP` text deltas per step, each tool step calling the trivial `bench_read` tool
 * (`readTool`; the host registers its own workspace `read_file`, hence the other name);
 * `permissionMode: 'auto'`, SQLite `:memory:`, one temporary directory as the workspace.
 *
 * - HTTP side: `startHost` on 127.0.0.1; per session `POST /sessions`, an SSE client on
 *   `GET /sessions/:id/events` that is connected (its `event: snapshot` read) before the clock
 *   starts, then per turn `POST /sessions/:id/turns` and `GET /sessions/:id/turns/:turnId?wait=60`.
 *   The client is node:http (`nodeHttpClient`; `fetchClient`, Node's fetch reading `response.body`,
 *   when run directly with `fetch`). The client runs in a process of its own
 *   (`http-client-process.ts`, forked once and reused by every round), as a service's clients do;
 *   the host runs in this process.
 * - In-process side: `createRuntime` with the same tools (the workspace tools + `bench_read`), the same
 *   sessions (same workspace), `session.startTurn` + `waitForTurn`, one `updates$` subscriber per session.
 *
 * A round ends when every turn has answered and every subscriber (SSE client or `updates$`) has seen
 * the `turn_finished` of its session's last turn, and the trace queue has been flushed. Every round
 * gets a fresh host or runtime (set up and shut down outside the timed region), so rounds do not
 * weigh on each other; the two sides alternate order.
 *
 * Delta latency: the model stamps `epochNow()` (`performance.timeOrigin + performance.now()`, a
 * wall clock with sub-millisecond resolution that both processes share) right before it yields each
 * delta (its text carries a process-wide counter, and the model knows the session from the user
 * message); the SSE client stamps each parsed `data:` envelope's arrival and sends the stamps back
 * with its round's answer, matched by session id and text. Only the timed rounds of the HTTP side are counted. One more, untimed, HTTP
 * round splits the latency at the host's socket write (`stampSocketWrites`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as http from 'node:http';
import { join } from 'node:path';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { fork, type ChildProcess } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { startHost } from '../src/host/host.js';
import {
  createRuntime,
  sqliteStorage,
  workspaceTools,
  type ModelPort,
  type ModelRequest,
  type ModelStreamEvent,
  type SessionHandle,
  type ToolCallPart,
} from '../src/index.js';
import { median, readTool, stepOf } from './common.js';
import { epochNow, FinishLine, turnText, type ClientKind } from './http-client.js';
import type { RoundFinished, RoundReply, RoundRequest } from './http-client-process.js';
import { benchScript } from './child-script.js';

export const BENCH_TOOL = 'bench_read';
const DELTAS_PER_STEP = 3;
const SESSION_IN_TEXT = /\b(ses_[0-9a-f-]{36})\b/;

export interface HttpBenchOptions {
  sessions: number;
  turnsPerSession: number;
  toolSteps: number;
  warmupRounds: number;
  rounds: number;
}

/** Send times of deltas in flight, by session and text; arrival times turn them into latencies. */
export class DeltaProbe {
  recording = false;
  private readonly sent = new Map<string, number>();
  private readonly written = new Map<string, number>();
  readonly latencies: number[] = [];
  /** With `stampSocketWrites`: model → the host's socket write, and that write → the client's callback. */
  readonly toSocket: number[] = [];
  readonly fromSocket: number[] = [];
  stamped = 0;

  stamp(sessionId: string, text: string): void {
    if (!this.recording) return;
    this.stamped += 1;
    this.sent.set(`${sessionId}\u0000${text}`, epochNow());
  }

  wrote(sessionId: string, text: string, at: number): void {
    if (this.recording) this.written.set(`${sessionId}\u0000${text}`, at);
  }

  arrived(sessionId: string, text: string, at = epochNow()): void {
    if (!this.recording) return;
    const key = `${sessionId}\u0000${text}`;
    const sent = this.sent.get(key);
    if (sent === undefined) return;
    this.sent.delete(key);
    this.latencies.push(at - sent);
    const written = this.written.get(key);
    if (written === undefined) return;
    this.written.delete(key);
    this.toSocket.push(written - sent);
    this.fromSocket.push(at - written);
  }

  /** Deltas stamped but never seen arriving. */
  get unmatched(): number {
    return this.sent.size;
  }
}

const DELTA_IN_CHUNK = /"sessionId":"([^"]+)"[^\n]*?"update":\{"type":"text_delta","text":"([^"]*)"/g;

/**
 * Diagnostic: stamps in `probe` the moment the host hands each text delta's SSE bytes to its socket
 * (`ServerResponse.write`, which the event route calls for every chunk of its stream), so the
 * latency splits into the host's part and the part spent waiting for the client's callback. It
 * decodes every streamed chunk, which costs time: used in a round of its own, never a timed one.
 * Returns the function that takes the stamp off again.
 */
export function stampSocketWrites(probe: DeltaProbe): () => void {
  const original = http.ServerResponse.prototype.write;
  const patched = function (this: http.ServerResponse, chunk: unknown, ...rest: unknown[]): boolean {
    // The event route writes its frames as text (`writeSessionEvents`); other bodies come as bytes.
    const text = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('utf8') : null;
    if (text !== null) {
      const at = epochNow();
      for (const match of text.matchAll(DELTA_IN_CHUNK)) probe.wrote(match[1]!, match[2]!, at);
    }
    return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  };
  http.ServerResponse.prototype.write = patched as typeof original;
  return () => {
    http.ServerResponse.prototype.write = original;
  };
}

/**
 * Like `stepModel`, but every step streams `DELTAS_PER_STEP` deltas whose texts are unique in the
 * process (`d<n> `), each stamped in the probe of its session just before it is yielded.
 */
export function probeModel(toolSteps: number, probe: DeltaProbe | null): ModelPort {
  let callSeq = 0;
  let deltaSeq = 0;
  return {
    capabilities: { contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 },
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const step = stepOf(request);
      const sessionId = sessionOfRequest(request);
      const texts: string[] = [];
      for (let i = 0; i < DELTAS_PER_STEP; i++) {
        const text = `d${++deltaSeq} `;
        texts.push(text);
        probe?.stamp(sessionId, text);
        yield { type: 'text_delta', text };
      }
      const toolCalls: ToolCallPart[] =
        step < toolSteps ? [{ id: `call_${++callSeq}`, name: BENCH_TOOL, argumentsText: JSON.stringify({ path: `f${step}.txt` }) }] : [];
      yield { type: 'response_completed', response: { text: texts.join(''), reasoning: '', toolCalls } };
    },
  };
}

/** The session id the bench put in the user's message (world-state messages may follow it). */
function sessionOfRequest(request: ModelRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!;
    const id = message.role === 'user' ? SESSION_IN_TEXT.exec(message.text)?.[1] : undefined;
    if (id) return id;
  }
  return '?';
}

export interface RoundResult {
  turns: number;
  elapsedMs: number;
  turnsPerSecond: number;
}

/** The forked client process (`http-client-process.ts`), one request at a time. */
export class ClientProcess {
  private readonly child: ChildProcess;

  constructor() {
    const script = benchScript('http-client-process');
    this.child = fork(script.file, [], { execArgv: script.execArgv });
  }

  /** One round: `onFinished` when its work is done (`RoundFinished`), then its reply. */
  round(request: RoundRequest, onFinished: (times: RoundFinished) => void = () => undefined): Promise<Extract<RoundReply, { ok: true }>> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the bench client process exited (${code})`));
      this.child.once('exit', onExit);
      const onMessage = (message: RoundFinished | RoundReply) => {
        if ('finished' in message) return onFinished(message);
        this.child.off('exit', onExit);
        this.child.off('message', onMessage);
        if (message.ok) resolve(message);
        else reject(new Error(`bench client: ${message.message}`));
      };
      this.child.on('message', onMessage);
      this.child.send(request);
    });
  }

  close(): void {
    if (this.child.connected) this.child.send('exit');
  }
}

/**
 * One round through the HTTP API: a fresh host in this process, its clients in `clients`. The
 * round's time runs from the client starting the turns to the trace queue being flushed after the
 * last subscriber has seen its last `turn_finished`: the flush starts when the client says so, not
 * once it has closed its streams and sent the arrivals.
 */
export async function httpRound(
  options: HttpBenchOptions,
  workspace: string,
  clients: ClientProcess,
  probe: DeltaProbe | null,
  clientKind: ClientKind = 'node-http',
  loopDelay?: RecordableHistogram,
): Promise<RoundResult> {
  const host = await startHost({
    host: '127.0.0.1',
    port: 0,
    workspace,
    model: probeModel(options.toolSteps, probe),
    idleTtlSeconds: 3_600,
    storage: sqliteStorage({ filename: ':memory:' }),
    runtime: { tools: [readTool(BENCH_TOOL)], agents: { default: { maxModelCalls: 50 } } },
  });
  try {
    const stopSampling = sampleLoopDelay(loopDelay);
    let ended: Promise<number> | null = null;
    const flush = () => host.runtime.flushTrace().then(() => (stopSampling(), epochNow()));
    const reply = await clients.round({ base: host.url, options, clientKind, recordDeltas: probe !== null }, () => {
      ended = flush();
      // Awaited below, once the reply is in; a failure is not unhandled meanwhile.
      ended.catch(() => undefined);
    });
    const elapsedMs = (await (ended ?? flush())) - reply.startedAt;
    for (const [sessionId, text, at] of reply.arrivals) probe?.arrived(sessionId, text, at);
    const turns = options.sessions * options.turnsPerSession;
    return { turns, elapsedMs, turnsPerSecond: (turns * 1000) / elapsedMs };
  } finally {
    await host.close();
  }
}

/** The same round in process: `createRuntime`, `startTurn` + `waitForTurn`, an `updates$` subscriber per session. */
export async function inProcessRound(options: HttpBenchOptions, workspace: string, probe: DeltaProbe | null, loopDelay?: RecordableHistogram): Promise<RoundResult> {
  const runtime = await createRuntime({
    storage: sqliteStorage({ filename: ':memory:' }),
    model: probeModel(options.toolSteps, probe),
    tools: [...workspaceTools({ root: workspace }), readTool(BENCH_TOOL)],
    agents: { default: { maxModelCalls: 50 } },
    idleTtlMs: 3_600_000,
  });
  const finishLine = new FinishLine();
  try {
    const sessions: SessionHandle[] = [];
    for (let i = 0; i < options.sessions; i++) {
      const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto', workspaceDir: workspace });
      session.updates$.subscribe((envelope) => {
        const update = envelope.update;
        if (update.type === 'text_delta') probe?.arrived(envelope.sessionId, update.text);
        else if (update.type === 'turn_finished') finishLine.finish(envelope.sessionId);
      });
      sessions.push(session);
    }
    const stopSampling = sampleLoopDelay(loopDelay);
    const started = performance.now();
    await Promise.all(
      sessions.map(async (session) => {
        for (let t = 0; t < options.turnsPerSession; t++) {
          const turn = await session.startTurn({ clientRequestId: `r${t}`, input: [{ type: 'text', text: turnText(session.id) }] });
          if (!turn.ok) throw new Error(`startTurn refused: ${JSON.stringify(turn.error)}`);
          const outcome = await session.waitForTurn(turn.turnId);
          if (outcome.status !== 'completed') throw new Error(`in-process bench turn did not complete: ${JSON.stringify(outcome)}`);
        }
        await finishLine.reached(session.id, options.turnsPerSession);
      }),
    );
    await runtime.flushTrace();
    const elapsedMs = performance.now() - started;
    stopSampling();
    const turns = options.sessions * options.turnsPerSession;
    return { turns, elapsedMs, turnsPerSecond: (turns * 1000) / elapsedMs };
  } finally {
    await runtime.shutdown();
  }
}

export interface HttpBenchResult {
  http: { samples: number[]; median: number };
  inProcess: { samples: number[]; median: number };
  /** median HTTP turns/s ÷ median in-process turns/s */
  ratio: number;
  /** Informational: the median of the per-round ratios (both sides ran back to back). */
  pairedRatio: number;
  delta: { measured: number; stamped: number; unmatched: number; p50: number; p99: number; max: number };
  /** Informational: the same figure from the in-process side (model → `updates$` subscriber). */
  inProcessDelta: { measured: number; p50: number; p99: number };
  /** Informational: event-loop delay (ms) over the timed rounds of each side: how long one turn of the saturated loop takes. */
  loopDelay: { http: LoopDelay; inProcess: LoopDelay };
  /**
   * Informational, from one more (untimed) HTTP round with the host's socket writes stamped: the
   * latency split into model → socket write (the host's part) and socket write → client callback.
   */
  split: { measured: number; total: Quantiles; toSocket: Quantiles; fromSocket: Quantiles };
}

export interface Quantiles {
  p50: number;
  p99: number;
  max: number;
}

function quantiles(values: readonly number[]): Quantiles {
  return { p50: quantile(values, 0.5), p99: quantile(values, 0.99), max: values.length === 0 ? Number.NaN : Math.max(...values) };
}

export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

function loopDelayOf(histogram: RecordableHistogram): LoopDelay {
  return { p50: histogram.percentile(50) / 1e3, p99: histogram.percentile(99) / 1e3, max: histogram.max / 1e3 };
}

/**
 * Records, in µs, how late a 1 ms timer fires, again and again until stopped: like
 * `monitorEventLoopDelay`, about the length of one turn of a busy event loop. (That monitor's
 * histogram cannot be merged across rounds, hence this.)
 */
function sampleLoopDelay(into: RecordableHistogram | undefined): () => void {
  if (!into) return () => undefined;
  let timer: NodeJS.Timeout;
  let armed = performance.now();
  const record = () => into.record(Math.max(1, Math.round((performance.now() - armed - 1) * 1000)));
  const arm = () => {
    armed = performance.now();
    timer = setTimeout(() => {
      record();
      arm();
    }, 1);
  };
  arm();
  return () => {
    clearTimeout(timer);
    // A probe still waiting when the round ends was held that long: a round that never hands the loop
    // back (the in-process side runs on promises alone when nothing does I/O) is one sample of its length.
    if (performance.now() - armed > 1) record();
  };
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

export async function measureHttpTurns(options: HttpBenchOptions, clientKind: ClientKind = 'node-http'): Promise<HttpBenchResult> {
  const workspace = mkdtempSync(join(tmpdir(), 'turnchart-bench-'));
  const clients = new ClientProcess();
  try {
    for (let i = 0; i < options.warmupRounds; i++) {
      await httpRound(options, workspace, clients, null, clientKind);
      await inProcessRound(options, workspace, null);
    }
    const httpProbe = new DeltaProbe();
    const localProbe = new DeltaProbe();
    httpProbe.recording = true;
    localProbe.recording = true;
    const http: number[] = [];
    const local: number[] = [];
    const httpLoop = createHistogram();
    const localLoop = createHistogram();
    for (let i = 0; i < options.rounds; i++) {
      const runHttp = async () => http.push((await httpRound(options, workspace, clients, httpProbe, clientKind, httpLoop)).turnsPerSecond);
      const runLocal = async () => local.push((await inProcessRound(options, workspace, localProbe, localLoop)).turnsPerSecond);
      if (i % 2 === 0) {
        await runHttp();
        await runLocal();
      } else {
        await runLocal();
        await runHttp();
      }
    }
    const splitProbe = new DeltaProbe();
    splitProbe.recording = true;
    const unstamp = stampSocketWrites(splitProbe);
    try {
      await httpRound(options, workspace, clients, splitProbe, clientKind);
    } finally {
      unstamp();
    }
    const lat = httpProbe.latencies;
    return {
      http: { samples: http, median: median(http) },
      inProcess: { samples: local, median: median(local) },
      ratio: median(http) / median(local),
      pairedRatio: median(http.map((h, i) => h / local[i]!)),
      delta: {
        measured: lat.length,
        stamped: httpProbe.stamped,
        unmatched: httpProbe.unmatched,
        p50: quantile(lat, 0.5),
        p99: quantile(lat, 0.99),
        max: lat.length === 0 ? Number.NaN : Math.max(...lat),
      },
      inProcessDelta: { measured: localProbe.latencies.length, p50: quantile(localProbe.latencies, 0.5), p99: quantile(localProbe.latencies, 0.99) },
      loopDelay: { http: loopDelayOf(httpLoop), inProcess: loopDelayOf(localLoop) },
      split: {
        measured: splitProbe.toSocket.length,
        total: quantiles(splitProbe.latencies),
        toSocket: quantiles(splitProbe.toSocket),
        fromSocket: quantiles(splitProbe.fromSocket),
      },
    };
  } finally {
    clients.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const client: ClientKind = process.argv[2] === 'fetch' ? 'fetch' : 'node-http';
  const [sessions = 50, turns = 4, steps = 3, warmup = 2, rounds = 5] = process.argv.slice(3).map(Number);
  const result = await measureHttpTurns({ sessions, turnsPerSession: turns, toolSteps: steps, warmupRounds: warmup, rounds }, client);
  console.log(JSON.stringify(result, null, 1));
}
