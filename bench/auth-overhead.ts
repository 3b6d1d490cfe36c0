/**
 * `auth_overhead_ratio` (issue 25): what telling users apart costs an HTTP turn — a signed identity
 * verified on every request, and the principal it names (whose sessions and quotas the host keeps) —
 * against the shared token of a single operator. Four hosts in this process, one per side, each
 * started once and served in short batches, the sides one after another in an order shuffled anew
 * for every batch (seeded, so every run shuffles alike):
 *
 * - `token`: the shared `--token`; its holder is the operator, an admin (a SHA-256 and a
 *   constant-time compare per request);
 * - `jwt`: HS256 JWTs (`jwt: { keys: { secret } }`), one token per user, a few users, none an admin:
 *   each token is verified once and then found in the verifier's cache, as a client that keeps its
 *   token sees; their sessions are theirs, and their quotas are checked (set far above this load);
 * - `jwt-fresh`: the same, but every request carries a token the host has never seen (same user, a
 *   `jti` of its own), so every request pays the signature and claims checks: the uncached case;
 * - `jwt-admin`: cached tokens as `jwt`, but each with `roles: ["admin"]`, as the operator is: what the
 *   verification costs without the per-principal bookkeeping an admin skips (informational).
 *
 * A turn is what a client of the API does: `POST /sessions`, `POST /sessions/:id/turns`,
 * `GET /sessions/:id/turns/:turnId?wait=60`; a batch is `clients` clients at once (each a user's,
 * round-robin over `users`), `turnsPerClient` turns each, one after another; each turn `toolSteps`
 * tool steps (`bench_read`) + the answer from a zero-latency model, `permissionMode: 'auto'`,
 * `idleTtlSeconds: 0` (a session closes once its turn has ended), SQLite `:memory:`. The clients run
 * in a process of their own (this file with `--client`), as in `http.ts`, so the host's figures are
 * not diluted by its clients' work; every token a batch sends is signed there before it starts.
 *
 * Per batch and side: the CPU time this process (the host's, thread pool included) used from the
 * batch's start until the trace queue was flushed after its last answer, per turn — the headline,
 * since on a shared machine a batch's wall time swings with other work far more than the few
 * microseconds per request compared here — and the wall time per turn. The figures are the medians
 * of the per-batch ratios to the `token` side of the same batch.
 *
 * Run alone: `npx tsx bench/auth-overhead.ts [users clients turnsPerClient toolSteps warmupBatches batches]`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SignJWT } from 'jose';
import { startHost, type HostOptions, type RunningHost } from '../src/host/host.js';
import { sqliteStorage } from '../src/index.js';
import { messageOf } from '../src/protocol/error-message.js';
import { benchScript } from './child-script.js';
import { median, readTool, stepModel } from './common.js';
import { epochNow } from './http-client.js';

const BENCH_TOOL = 'bench_read';
const SHARED_TOKEN = 'bench-shared-token-0123456789abcdef';
const JWT_SECRET = 'bench-jwt-secret-0123456789abcdef0123456789';
const REQUESTS_PER_TURN = 3;
/** Per-principal quotas far above the bench's load: checked on every request as usual, never reached. */
const UNREACHED = 1_000_000;

export type AuthSide = 'token' | 'jwt' | 'jwt-fresh' | 'jwt-admin';
const SIDES: readonly AuthSide[] = ['token', 'jwt', 'jwt-fresh', 'jwt-admin'];

export interface AuthOverheadOptions {
  users: number;
  clients: number;
  /** Turns each client runs per batch, one after another. */
  turnsPerClient: number;
  toolSteps: number;
  warmupBatches: number;
  batches: number;
}

export const AUTH_OVERHEAD_DEFAULTS: AuthOverheadOptions = { users: 4, clients: 8, turnsPerClient: 2, toolSteps: 1, warmupBatches: 10, batches: 60 };

interface Samples {
  median: number;
  samples: number[];
}

/** One side's batch, per turn: the batch's wall time, and the CPU time this process used in it. */
interface Turn {
  ms: number;
  cpuUs: number;
}

/** Per-turn figures of each side, and the medians of the per-batch ratios to the `token` side. */
interface Figures {
  perTurn: Record<AuthSide, Samples>;
  /** `jwt` ÷ `token`: cached tokens of users who are not admins. */
  ratio: number;
  /** `jwt-fresh` ÷ `token`: a token never seen before on every request. */
  uncachedRatio: number;
  /** `jwt-admin` ÷ `token`: cached tokens of admins (no per-principal quotas). */
  adminRatio: number;
}

export interface AuthOverheadResult {
  options: AuthOverheadOptions;
  /** This process's CPU time per turn, µs (user + system; the host's thread pool included): the headline figures. */
  cpu: Figures;
  /** Wall time per turn, ms, from the clients' first request to the trace flushed after the last answer. */
  wall: Figures;
  /** How long the whole measurement took, the hosts' starts included. */
  seconds: number;
}

/** What the client process is asked to do: one batch against the host at `base`. */
interface ClientBatch {
  base: string;
  side: AuthSide;
  options: AuthOverheadOptions;
}

type ClientReply = { ok: true; startedAt: number; failed: number } | { ok: false; message: string };

export async function measureAuthOverhead(options: AuthOverheadOptions = AUTH_OVERHEAD_DEFAULTS): Promise<AuthOverheadResult> {
  const started = performance.now();
  const workspace = mkdtempSync(join(tmpdir(), 'turnchart-bench-auth-'));
  const clients = new AuthClientProcess();
  const hosts = new Map<AuthSide, RunningHost>();
  const batches: Record<AuthSide, Turn>[] = [];
  try {
    for (const side of SIDES) hosts.set(side, await hostOf(side, options, workspace));
    const random = seeded(25);
    for (let batch = 0; batch < options.warmupBatches + options.batches; batch++) {
      const measured = {} as Record<AuthSide, Turn>;
      // A new order every batch: what a batch leaves behind (sessions closing, garbage) falls on whichever side comes next.
      for (const side of shuffled(SIDES, random)) measured[side] = await perTurn(side, hosts.get(side)!, options, clients);
      if (batch >= options.warmupBatches) batches.push(measured);
    }
  } finally {
    clients.close();
    for (const host of hosts.values()) await host.close();
    rmSync(workspace, { recursive: true, force: true });
  }
  const figures = (of: (turn: Turn) => number): Figures => {
    const samples = (side: AuthSide): Samples => {
      const xs = batches.map((b) => of(b[side]));
      return { median: median(xs), samples: xs };
    };
    const ratio = (side: AuthSide) => median(batches.map((b) => of(b[side]) / of(b.token)));
    return {
      perTurn: { token: samples('token'), jwt: samples('jwt'), 'jwt-fresh': samples('jwt-fresh'), 'jwt-admin': samples('jwt-admin') },
      ratio: ratio('jwt'),
      uncachedRatio: ratio('jwt-fresh'),
      adminRatio: ratio('jwt-admin'),
    };
  };
  return { options, cpu: figures((t) => t.cpuUs), wall: figures((t) => t.ms), seconds: (performance.now() - started) / 1000 };
}

/** A small seeded generator (mulberry32), so every run shuffles alike. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function hostOf(side: AuthSide, options: AuthOverheadOptions, workspace: string): Promise<RunningHost> {
  const auth: Partial<HostOptions> = side === 'token' ? { token: SHARED_TOKEN } : { jwt: { keys: { secret: JWT_SECRET } } };
  return startHost({
    host: '127.0.0.1',
    port: 0,
    workspace,
    model: stepModel(options.toolSteps, BENCH_TOOL),
    idleTtlSeconds: 0,
    storage: sqliteStorage({ filename: ':memory:' }),
    runtime: { tools: [readTool(BENCH_TOOL)] },
    maxSessionsPerPrincipal: UNREACHED,
    maxRunningTurnsPerPrincipal: UNREACHED,
    turnsPerMinutePerPrincipal: UNREACHED,
    warn: () => undefined,
    ...auth,
  });
}

/** One batch on that side's host, per turn. */
async function perTurn(side: AuthSide, host: RunningHost, options: AuthOverheadOptions, clients: AuthClientProcess): Promise<Turn> {
  // The host is idle until the clients start (they sign their tokens first): this process's CPU from here is the batch's.
  const cpu = process.cpuUsage();
  const reply = await clients.batch({ base: host.url, side, options });
  await host.runtime.flushTrace();
  const elapsedMs = epochNow() - reply.startedAt;
  const used = process.cpuUsage(cpu);
  if (reply.failed > 0) throw new Error(`${reply.failed} turns of a ${side} batch did not complete`);
  const turns = options.clients * options.turnsPerClient;
  return { ms: elapsedMs / turns, cpuUs: (used.user + used.system) / turns };
}

/** The forked client process, one batch at a time. */
class AuthClientProcess {
  private readonly child: ChildProcess;

  constructor() {
    const script = benchScript('auth-overhead');
    this.child = fork(script.file, ['--client'], { execArgv: script.execArgv });
  }

  batch(request: ClientBatch): Promise<Extract<ClientReply, { ok: true }>> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the auth bench's client process exited (${code})`));
      this.child.once('exit', onExit);
      this.child.once('message', (reply: ClientReply) => {
        this.child.off('exit', onExit);
        if (reply.ok) resolve(reply);
        else reject(new Error(`auth bench client: ${reply.message}`));
      });
      this.child.send(request);
    });
  }

  close(): void {
    if (this.child.connected) this.child.send('exit');
  }
}

// ---- The client process ----

const signingKey = new TextEncoder().encode(JWT_SECRET);
/** The cached sides' tokens, signed once for the whole run: a client keeps its token. */
const kept = new Map<string, Promise<string>>();
/** A keep-alive agent per host, kept across batches, as a client keeps its connections. */
const agents = new Map<string, http.Agent>();

function sign(user: string, roles: string[]): Promise<string> {
  return new SignJWT({ jti: randomUUID(), roles }).setProtectedHeader({ alg: 'HS256' }).setSubject(user).setIssuedAt().setExpirationTime('2h').sign(signingKey);
}

/** The `authorization` header of each request each client sends in a batch, in order; signed before the batch starts. */
async function credentials(side: AuthSide, options: AuthOverheadOptions): Promise<string[][]> {
  const requests = options.turnsPerClient * REQUESTS_PER_TURN;
  const userOf = (client: number) => `user-${client % options.users}`;
  if (side === 'token') return Array.from({ length: options.clients }, () => Array<string>(requests).fill(`Bearer ${SHARED_TOKEN}`));
  if (side === 'jwt-fresh') {
    const all: string[][] = [];
    for (let c = 0; c < options.clients; c++) all.push(await Promise.all(Array.from({ length: requests }, async () => `Bearer ${await sign(userOf(c), [])}`)));
    return all;
  }
  const roles = side === 'jwt-admin' ? ['admin'] : [];
  const tokenOf = (user: string) => {
    const key = `${side} ${user}`;
    if (!kept.has(key)) kept.set(key, sign(user, roles));
    return kept.get(key)!;
  };
  return Promise.all(Array.from({ length: options.clients }, async (_, c) => Array<string>(requests).fill(`Bearer ${await tokenOf(userOf(c))}`)));
}

async function clientBatch({ base, side, options }: ClientBatch): Promise<ClientReply> {
  if (!agents.has(base)) agents.set(base, new http.Agent({ keepAlive: true }));
  const agent = agents.get(base)!;
  try {
    const headers = await credentials(side, options);
    const send = <T>(method: string, path: string, authorization: string, body?: unknown) =>
      new Promise<T>((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const request = http.request(
          `${base}${path}`,
          {
            method,
            agent,
            headers: { authorization, ...(payload !== undefined && { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }) },
          },
          (response) => {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (text += chunk));
            response.on('error', reject);
            response.on('end', () => {
              const status = response.statusCode ?? 0;
              if (status >= 300) reject(new Error(`${method} ${path}: HTTP ${status} ${text.slice(0, 300)}`));
              else resolve(JSON.parse(text) as T);
            });
          },
        );
        request.on('error', reject);
        request.end(payload);
      });
    let failed = 0;
    const startedAt = epochNow();
    await Promise.all(
      headers.map(async (mine) => {
        let next = 0;
        const auth = () => mine[next++]!;
        for (let t = 0; t < options.turnsPerClient; t++) {
          const { sessionId } = await send<{ sessionId: string }>('POST', '/sessions', auth(), { permissionMode: 'auto' });
          const turn = await send<{ turnId: string }>('POST', `/sessions/${sessionId}/turns`, auth(), {
            clientRequestId: `t${t}`,
            input: [{ type: 'text', text: 'read a file' }],
          });
          const state = await send<{ status: string }>('GET', `/sessions/${sessionId}/turns/${turn.turnId}?wait=60`, auth());
          if (state.status !== 'completed') failed += 1;
        }
      }),
    );
    return { ok: true, startedAt, failed };
  } catch (error) {
    return { ok: false, message: messageOf(error) };
  }
}

function runClient(): void {
  process.on('message', (request: ClientBatch | 'exit') => {
    if (request === 'exit') {
      for (const agent of agents.values()) agent.destroy();
      process.disconnect();
      return;
    }
    void clientBatch(request).then((reply) => process.send!(reply));
  });
}

export function reportAuthOverhead(r: AuthOverheadResult, log: (line?: string) => void = console.log): void {
  const o = r.options;
  const cpu = (side: AuthSide) => `${r.cpu.perTurn[side].median.toFixed(0)} µs`;
  const wall = (side: AuthSide) => `${r.wall.perTurn[side].median.toFixed(2)} ms`;
  const bar = r.cpu.ratio <= 1.1 ? 'meets bar' : 'MISSES bar';
  log(
    `[auth overhead] batches of ${o.clients} clients at once (${o.users} users), ${o.turnsPerClient} turns each (POST /sessions, POST turn, GET ?wait; ${o.toolSteps} tool step + answer);` +
      ` one host per side, ${o.warmupBatches} warm-up + ${o.batches} batches per side, the sides in a new order every batch; the clients in a process of their own`,
  );
  log(`  host CPU per turn, medians: shared token ${cpu('token')}, JWT a token per user ${cpu('jwt')}, a new token every request ${cpu('jwt-fresh')}, admins' tokens ${cpu('jwt-admin')}`);
  log(`  median of the per-batch ratios, JWT (cached, users) ÷ shared token ${r.cpu.ratio.toFixed(3)} — bar ≤ 1.1: ${bar}`);
  log(`  median of the per-batch ratios, JWT with a new token on every request ÷ shared token ${r.cpu.uncachedRatio.toFixed(3)} (every request verified)`);
  log(`  informational: admins' cached JWTs (no per-principal quotas, as the operator) ÷ shared token ${r.cpu.adminRatio.toFixed(3)}`);
  log(
    `  informational: wall per turn, medians: ${wall('token')}, ${wall('jwt')}, ${wall('jwt-fresh')}, ${wall('jwt-admin')};` +
      ` per-batch wall ratios ${r.wall.ratio.toFixed(3)}, ${r.wall.uncachedRatio.toFixed(3)}, ${r.wall.adminRatio.toFixed(3)}; ${r.seconds.toFixed(1)} s in all`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--client')) runClient();
  else {
    const [users, clients, turnsPerClient, toolSteps, warmupBatches, batches] = process.argv.slice(2).map(Number);
    const d = AUTH_OVERHEAD_DEFAULTS;
    const result = await measureAuthOverhead({
      users: users ?? d.users,
      clients: clients ?? d.clients,
      turnsPerClient: turnsPerClient ?? d.turnsPerClient,
      toolSteps: toolSteps ?? d.toolSteps,
      warmupBatches: warmupBatches ?? d.warmupBatches,
      batches: batches ?? d.batches,
    });
    reportAuthOverhead(result);
    console.log(`auth_overhead_ratio: ${result.cpu.ratio.toFixed(3)}`);
    console.log(`auth_overhead_uncached_ratio: ${result.cpu.uncachedRatio.toFixed(3)}`);
  }
}
