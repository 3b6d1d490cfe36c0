/**
 * `failover_p50_ms`, `failover_p99_ms` and `turns_lost_to_crashes` (issue 26): what a host's death
 * costs a turn running on it. Three `turnchart serve` processes on one PostgreSQL schema and the
 * local RabbitMQ, `--lease-ttl 5`. Each round creates sessions on one host (it owns them), starts a
 * turn in each — half of them with the model streaming, half with a `run_command` running — and
 * follows each session's event stream through another host. Once every turn is under way the owner
 * is SIGKILLed; each client's stream ends, and it reconnects round-robin to the hosts left with
 * `Last-Event-ID`. The figure is the time from the kill until the first update of the turn arrives
 * on a connection opened after the kill (updates the dead host had published before it died are
 * not counted). Every such turn must then end `completed` on another host; the turns that do not
 * are `turns_lost_to_crashes`. The killed host is started again (same `--owner-host`) before the
 * next round, whose victim is the next host.
 *
 *   npx tsx bench/failover.ts        (alone, from source)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { round } from './common.js';
import { quantile } from './http.js';
import { LOCAL_AMQP, LOCAL_POSTGRES, taskBenchUnavailable } from './tasks.js';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(BENCH_DIR);

export interface FailoverOptions {
  hosts: number;
  /** Rounds, each one SIGKILL of the host that owns the round's sessions. */
  kills: number;
  /** Turns running on the victim at each kill (half streaming, half in a tool). */
  turnsPerKill: number;
  leaseTtlS: number;
}

export const FAILOVER: FailoverOptions = { hosts: 3, kills: 5, turnsPerKill: 4, leaseTtlS: 5 };

export interface FailoverSample {
  mode: 'stream' | 'tool';
  /** ms from the kill to the turn's first update on a connection opened after it; null: none came. */
  failoverMs: number | null;
  /** How the turn ended, as a host other than the victim reports it. */
  status: string;
  resumed: boolean;
}

/** The `turnchart serve` command line: the compiled one under `npm run bench`, the source through tsx otherwise. */
function cliCommand(): string[] {
  const compiled = import.meta.url.endsWith('.js');
  const file = fileURLToPath(new URL(compiled ? '../src/cli/main.js' : '../src/cli/main.ts', import.meta.url));
  return compiled ? [file] : ['--import', 'tsx', file];
}

interface Host {
  url: string;
  child: ChildProcess;
  exited: Promise<unknown>;
  output(): string;
}

async function startHost(args: string[]): Promise<Host> {
  const child = spawn(process.execPath, [...cliCommand(), 'serve', '--port', '0', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /turnchart listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then(() => reject(new Error(`turnchart serve exited before listening:\n${output}`)));
  });
  return { url, child, exited, output: () => output };
}

/**
 * The provider: a prompt `failover <id> stream` is answered, the first time, by text deltas every
 * 100 ms for as long as the connection lasts (the call in flight when its host dies), and by `done`
 * when asked again; `failover <id> tool` asks for a `run_command` that sleeps, then answers `done`
 * once the conversation holds its result, whatever it is.
 */
async function startModel(): Promise<{ baseUrl: string; server: Server }> {
  const streamed = new Set<string>();
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text) as { messages: Array<{ role: string; content?: unknown }> };
      const at = body.messages.findLastIndex((m) => m.role === 'user' && /failover \S+ (stream|tool)/.test(contentText(m.content)));
      const [, id, mode] = /failover (\S+) (stream|tool)/.exec(contentText(body.messages[at]?.content)) ?? [];
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const answered = body.messages.slice(at + 1).some((m) => m.role === 'tool');
      if (mode === 'stream' && !streamed.has(id!)) {
        streamed.add(id!);
        void trickle(res);
        return;
      }
      if (mode === 'tool' && !answered) {
        const args = JSON.stringify({ command: 'sleep 60' });
        writeChunks(res, [{ role: 'assistant', content: 'running' }, { tool_calls: [{ index: 0, id: `call_${id}`, type: 'function', function: { name: 'run_command', arguments: args } }] }], 'tool_calls');
        return;
      }
      writeChunks(res, [{ role: 'assistant', content: `done ${id}` }], 'stop');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part.text === 'string' ? part.text : '')).join('\n') : '';
}

function chunk(delta: object, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'bench', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

function writeChunks(res: ServerResponse, deltas: object[], finish: string): void {
  for (const delta of deltas) res.write(chunk(delta));
  res.end(`${chunk({}, finish)}data: [DONE]\n\n`);
}

/** Text deltas every 100 ms until the host that asked goes away (or a minute passes: the bench then fails). */
async function trickle(res: ServerResponse): Promise<void> {
  res.write(chunk({ role: 'assistant', content: '' }));
  for (let i = 0; i < 600 && !res.destroyed; i++) {
    res.write(chunk({ content: `word${i} ` }));
    await delay(100);
  }
  if (!res.destroyed) res.end(`${chunk({}, 'stop')}data: [DONE]\n\n`);
}

/** A client following one session's events through the round-robin hosts, reconnecting with `Last-Event-ID`. */
class Watch {
  lastId: number | null = null;
  /** Updates received: when, on which connection, of which type. */
  readonly updates: Array<{ at: number; connection: number; type: string }> = [];
  connectionsOpenedAt: number[] = [];
  outcome: string | null = null;
  private readonly stopper = new AbortController();
  private readonly listeners: Array<() => boolean> = [];
  readonly done: Promise<void>;

  constructor(
    private readonly sessionId: string,
    private readonly hosts: () => string[],
  ) {
    this.done = this.follow();
  }

  /** Resolves once an update of `type` has arrived. */
  when(type: string): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (!this.updates.some((u) => u.type === type)) return false;
        resolve();
        return true;
      };
      if (!check()) this.listeners.push(check);
    });
  }

  stop(): void {
    this.stopper.abort();
  }

  private async follow(): Promise<void> {
    let turn = 0;
    while (!this.stopper.signal.aborted && this.outcome === null) {
      const hosts = this.hosts();
      const host = hosts[turn++ % hosts.length]!;
      const connection = this.connectionsOpenedAt.push(performance.now()) - 1;
      let received = 0;
      try {
        const response = await fetch(`${host}/sessions/${this.sessionId}/events`, {
          headers: { accept: 'text/event-stream', ...(this.lastId !== null && { 'last-event-id': String(this.lastId) }) },
          signal: this.stopper.signal,
        });
        if (response.status !== 200) await response.arrayBuffer();
        else
          for await (const event of events(response.body!)) {
            received += 1;
            if (event.id !== null) this.lastId = Number(event.id);
            if (event.event === 'snapshot_required' || event.event === 'snapshot') {
              const runtime = (JSON.parse(event.data) as { runtime: { kind: string; outcome?: { status: string } } }).runtime;
              if (runtime.kind === 'terminal' && this.updates.length > 0) this.outcome = runtime.outcome?.status ?? 'unknown';
              continue;
            }
            const envelope = JSON.parse(event.data) as { update: { type: string; outcome?: { status: string } } };
            this.updates.push({ at: performance.now(), connection, type: envelope.update.type });
            if (envelope.update.type === 'turn_finished') this.outcome = envelope.update.outcome?.status ?? 'unknown';
            for (const listener of [...this.listeners]) if (listener()) this.listeners.splice(this.listeners.indexOf(listener), 1);
            if (this.outcome !== null) break;
          }
      } catch {
        // The host died under the stream, or the watch was stopped: the loop decides.
      }
      // A client's pause before it asks the next host, when this one gave it nothing (refused, or down).
      if (received === 0) await delay(50);
    }
  }
}

async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; id: string | null; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      let id: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('id: ')) id = line.slice(4);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) yield { event, id, data: data.join('\n') };
    }
  }
}

/** A JSON request, sent again to the next host on 503/504 or a dropped connection. */
async function request(hosts: () => string[], method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  let last = '';
  for (let attempt = 0; attempt < 200; attempt++) {
    const list = hosts();
    try {
      const response = await fetch(list[attempt % list.length]! + path, {
        method,
        ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
      const parsed = (await response.json()) as Record<string, unknown>;
      if (response.status !== 503 && response.status !== 504) return { status: response.status, body: parsed };
      last = `${response.status} ${JSON.stringify(parsed)}`;
    } catch (error) {
      // The host went away: the next one.
      last = String(error);
    }
    await delay(100);
  }
  throw new Error(`${method} ${path}: no host answered (the last attempt: ${last})`);
}

export async function measureFailover(options: FailoverOptions, urls: { pg: string; amqp: string }, crashes: string[] = []): Promise<FailoverSample[]> {
  const schema = `tc_bench_${randomUUID().replaceAll('-', '')}`;
  const databaseUrl = `${urls.pg}${urls.pg.includes('?') ? '&' : '?'}schema=${schema}`;
  const workspace = await mkdtemp(join(tmpdir(), 'turnchart-bench-failover-'));
  const model = await startModel();
  const argsOf = (i: number) => [
    '--database-url', databaseUrl,
    '--amqp-url', urls.amqp,
    '--owner-host', `f${i}.bench`,
    '--lease-ttl', String(options.leaseTtlS),
    '--workspace', workspace,
    '--model', `openai-compatible:${model.baseUrl}#bench`,
    '--permission-mode', 'auto',
    '--max-running-turns-per-principal', '1000',
    '--max-streams-per-principal', '1000',
    '--turns-per-minute-per-principal', '100000',
  ];
  const hosts: Array<Host | null> = [];
  const watches: Watch[] = [];
  const samples: FailoverSample[] = [];
  let closing = false;
  /** Starts host `i` in its slot; a host that dies without being killed is reported and started again. */
  const start = async (i: number): Promise<void> => {
    const host = await startHost(argsOf(i));
    hosts[i] = host;
    void host.exited.then(async () => {
      if (hosts[i] !== host || closing) return;
      hosts[i] = null;
      crashes.push(`host ${i} exited on its own (${String(host.child.exitCode ?? host.child.signalCode)}): ${host.output().slice(-1_500)}`);
      await start(i).catch((error: unknown) => crashes.push(`host ${i} could not be started again: ${String(error)}`));
    });
  };
  try {
    // The first host migrates the schema alone; the others start together.
    await start(0);
    await Promise.all(Array.from({ length: options.hosts - 1 }, (_, i) => start(i + 1)));
    for (let k = 0; k < options.kills; k++) {
      const v = k % options.hosts;
      const victim = hosts[v]!;
      const others = () => hosts.filter((h, i): h is Host => h !== null && i !== v).map((h) => h.url);
      const round = await Promise.all(
        Array.from({ length: options.turnsPerKill }, async (_, j) => {
          const mode = j % 2 === 0 ? ('stream' as const) : ('tool' as const);
          const created = await request(() => [victim.url], 'POST', '/sessions', {});
          const sessionId = created.body.sessionId as string;
          const watch = new Watch(sessionId, others);
          watches.push(watch);
          const started = await request(() => [victim.url], 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'c', input: [{ type: 'text', text: `failover ${k}-${j} ${mode}` }] });
          if (started.status !== 202) throw new Error(`POST turn answered ${started.status}: ${JSON.stringify(started.body)}`);
          await watch.when(mode === 'stream' ? 'text_delta' : 'tool_call_started');
          return { mode, sessionId, turnId: started.body.turnId as string, watch };
        }),
      );
      const killedAt = performance.now();
      hosts[v] = null;
      victim.child.kill('SIGKILL');
      await victim.exited;
      // The next update of each turn, then its end; a minute at most.
      const limit = new AbortController();
      await Promise.race([Promise.all(round.map((r) => r.watch.done)), delay(60_000, undefined, { signal: limit.signal }).catch(() => undefined)]);
      limit.abort();
      for (const r of round) {
        r.watch.stop();
        const after = r.watch.connectionsOpenedAt.findIndex((at) => at > killedAt);
        const first = after < 0 ? undefined : r.watch.updates.find((u) => u.connection >= after);
        const state = await request(others, 'GET', `/sessions/${r.sessionId}/turns/${r.turnId}?wait=10`);
        samples.push({
          mode: r.mode,
          failoverMs: first ? first.at - killedAt : null,
          status: String(state.body.status),
          resumed: r.watch.updates.some((u) => u.type === 'turn_resumed'),
        });
      }
      await start(v);
    }
    return samples;
  } catch (error) {
    // What the hosts said is the first thing to look at when a round goes wrong.
    for (const [i, host] of hosts.entries()) if (host) console.error(`--- host ${i} (exit ${String(host.child.exitCode ?? host.child.signalCode)}):\n${host.output().slice(-6_000)}`);
    throw error;
  } finally {
    closing = true;
    for (const watch of watches) watch.stop();
    for (const host of hosts) host?.child.kill('SIGKILL');
    await Promise.all(hosts.flatMap((host) => (host ? [host.exited] : [])));
    model.server.closeAllConnections();
    model.server.close();
    await rm(workspace, { recursive: true, force: true });
    const client = new pg.Client({ connectionString: urls.pg });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
  }
}

/** The `[failover]` section of the report; resolves with its figure lines. */
export async function reportFailover(log: (line?: string) => void, options: FailoverOptions = FAILOVER): Promise<string[]> {
  const urls = { pg: process.env.TEST_DATABASE_URL ?? LOCAL_POSTGRES, amqp: process.env.TEST_AMQP_URL ?? LOCAL_AMQP };
  const unavailable = await taskBenchUnavailable(urls);
  if (unavailable) {
    log(`[failover] skipped: ${unavailable}`);
    log();
    return ['failover_p50_ms: n/a', 'failover_p99_ms: n/a', 'turns_lost_to_crashes: n/a'];
  }
  const started = performance.now();
  const crashes: string[] = [];
  const samples = await measureFailover(options, urls, crashes);
  const measured = samples.flatMap((s) => (s.failoverMs === null ? [] : [s.failoverMs]));
  const p50 = round(quantile(measured, 0.5));
  const p99 = round(quantile(measured, 0.99));
  const lost = samples.filter((s) => s.status !== 'completed');
  const barMs = (options.leaseTtlS + 2) * 1000;
  const count = (xs: string[]) => Object.entries(xs.reduce<Record<string, number>>((acc, x) => ((acc[x] = (acc[x] ?? 0) + 1), acc), {})).map(([k, n]) => `${k} ${n}`).join(', ');
  log(`[failover] ${options.hosts} turnchart serve processes on PostgreSQL + RabbitMQ, --lease-ttl ${options.leaseTtlS}; ${options.kills} SIGKILLs, each of the host running ${options.turnsPerKill} turns (half streaming from the model, half in run_command)`);
  log(`  kill → the turn's next update on a client's SSE stream through another host (reconnected with Last-Event-ID): ${measured.length} of ${samples.length} turns had one`);
  log(`  p50 ${p50} ms, p99 ${p99} ms — bar p99 ≤ lease-ttl + 2 s (${barMs} ms): ${p99 <= barMs && measured.length === samples.length ? 'meets bar' : 'MISSES bar'}`);
  log(`  turns that did not end completed: ${lost.length} of ${samples.length} — bar 0: ${lost.length === 0 ? 'meets bar' : 'MISSES bar'}`);
  // A surviving host that died on its own is a finding: its turns are among the lost ones.
  for (const crash of crashes) log(`  HOST CRASH: ${crash.replaceAll('\n', '\n    ')}`);
  log(`  informational: outcomes ${count(samples.map((s) => s.status))}; turn_resumed seen for ${samples.filter((s) => s.resumed).length};` +
    ` samples ${measured.map((ms) => round(ms)).sort((a, b) => a - b).join(', ')}; ${round((performance.now() - started) / 1000, 1)} s for [failover]`);
  log();
  return [`failover_p50_ms: ${measured.length > 0 ? p50 : 'n/a'}`, `failover_p99_ms: ${measured.length > 0 ? p99 : 'n/a'}`, `turns_lost_to_crashes: ${lost.length}`];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const line of await reportFailover((line = '') => console.log(line))) console.log(line);
}
