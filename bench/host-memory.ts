/**
 * `host_rss_growth_mb_per_1000_sessions`: what a long-running host keeps per session it has served.
 *
 * The host runs alone in a child `node --expose-gc --import tsx bench/host-memory.ts` (started by
 * `measureHostMemory` with an IPC channel): `startHost` on 127.0.0.1 with `idleTtlSeconds: 0`, so every
 * session is closed as soon as it is idle, SQLite `:memory:`, the zero-latency `stepModel(1)` (one tool step, then the answer) with the
 * `bench_read` tool, `permissionMode: 'auto'`. The HTTP client is the parent process (node:http,
 * keep-alive), so the child's memory is the host's alone. Sessions are served one after another:
 * `POST /sessions`, `POST /sessions/:id/turns`, `GET /sessions/:id/turns/:turnId?wait=60`.
 *
 * After a warm-up of `warmup` sessions the child settles (waits until no session is open, then
 * `gc()` four times) and reports `process.memoryUsage()` as the baseline; then `sessions` more are
 * served, with the same report every `sampleEvery` sessions and at the end. The stored rows grow
 * with every session, and an in-memory SQLite database lives in the process (outside the JS heap),
 * so the child also reports the database's size (`page_count × page_size`). Run directly with
 * `--file-db`, the database is a file instead (a diagnostic: what the host keeps without its rows).
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { sql } from 'kysely';
import { sqliteDatabase } from '../storage/sqlite.js';
import { KyselySessionStorage } from '../storage/kysely-storage.js';
import { startHost } from '../src/host/host.js';
import { gcIfAvailable, readTool, stepModel } from './common.js';
import { BENCH_TOOL } from './http.js';
import { nodeHttpClient, type BenchClient } from './http-client.js';
import { benchScript } from './child-script.js';


export interface HostMemorySample {
  /** Sessions served since the baseline. */
  served: number;
  rss: number;
  heapUsed: number;
  /** V8's committed heap: what the heap takes of the RSS, used or not. */
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** `page_count × page_size` of the in-memory database. */
  sqliteBytes: number;
  openSessions: number;
  /** Whether the child settled (no session open) before it measured. */
  settled: boolean;
}

export interface HostMemoryResult {
  warmup: number;
  sessions: number;
  start: HostMemorySample;
  end: HostMemorySample;
  samples: HostMemorySample[];
  /** (end − start) RSS in MB ÷ (sessions / 1000). */
  rssMbPer1000: number;
  /** Informational: the least-squares slope of RSS over all readings, MB per 1000 sessions (less swayed by one reading). */
  rssSlopeMbPer1000: number;
  heapMbPer1000: number;
  sqliteMbPer1000: number;
  wallMs: number;
  /** Sessions that did not end `completed` (should be 0). */
  failures: number;
}

type ToChild = { type: 'measure'; served: number } | { type: 'close' };
type FromChild = { type: 'ready'; url: string } | { type: 'sample'; sample: HostMemorySample };

const MB = 1024 * 1024;

/** Spawns the host child, serves the sessions from this process, and collects the child's reports. */
export async function measureHostMemory(options: { warmup: number; sessions: number; sampleEvery: number; fileDb?: boolean }): Promise<HostMemoryResult> {
  const script = benchScript('host-memory');
  const child = fork(script.file, ['--child', ...(options.fileDb ? ['--file-db'] : [])], {
    execArgv: ['--expose-gc', ...script.execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code, signal) => reject(new Error(`host child exited (${code ?? signal})`))));
  const next = () =>
    Promise.race([exited, new Promise<FromChild>((resolve) => child.once('message', (message) => resolve(message as FromChild)))]);
  const send = (message: ToChild) => child.send(message);
  let client: BenchClient | null = null;
  try {
    const ready = await next();
    if (ready.type !== 'ready') throw new Error(`host child: unexpected ${JSON.stringify(ready)}`);
    client = nodeHttpClient(ready.url);
    const measure = async (served: number) => {
      send({ type: 'measure', served });
      const reply = await next();
      if (reply.type !== 'sample') throw new Error(`host child: unexpected ${JSON.stringify(reply)}`);
      return reply.sample;
    };
    let failures = 0;
    for (let i = 0; i < options.warmup; i++) failures += await serveOne(client, `w${i}`);
    const start = await measure(0);
    const samples: HostMemorySample[] = [start];
    const started = performance.now();
    for (let i = 1; i <= options.sessions; i++) {
      failures += await serveOne(client, `s${i}`);
      if (i % options.sampleEvery === 0 && i !== options.sessions) samples.push(await measure(i));
    }
    const wallMs = performance.now() - started;
    const end = await measure(options.sessions);
    samples.push(end);
    const per1000 = (bytes: number) => bytes / MB / (options.sessions / 1000);
    return {
      warmup: options.warmup,
      sessions: options.sessions,
      start,
      end,
      samples,
      rssMbPer1000: per1000(end.rss - start.rss),
      rssSlopeMbPer1000: slope(samples.map((s) => [s.served / 1000, s.rss / MB])),
      heapMbPer1000: per1000(end.heapUsed - start.heapUsed),
      sqliteMbPer1000: per1000(end.sqliteBytes - start.sqliteBytes),
      wallMs,
      failures,
    };
  } finally {
    client?.close();
    if (child.connected) send({ type: 'close' });
    await Promise.race([exited.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5_000))]);
    if (child.exitCode === null) child.kill();
  }
}

function slope(points: [number, number][]): number {
  const mx = points.reduce((sum, [x]) => sum + x, 0) / points.length;
  const my = points.reduce((sum, [, y]) => sum + y, 0) / points.length;
  const sxy = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0);
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0);
  return sxy / sxx;
}

/** One session through the API: create, one turn, wait for it. Answers 1 when the turn did not complete. */
async function serveOne(client: BenchClient, requestId: string): Promise<number> {
  const { sessionId } = await client.post<{ sessionId: string }>('/sessions', { permissionMode: 'auto' }, 201);
  const turn = await client.post<{ turnId: string }>(
    `/sessions/${sessionId}/turns`,
    { clientRequestId: requestId, input: [{ type: 'text', text: 'read two files' }] },
    202,
  );
  const state = await client.get<{ status: string }>(`/sessions/${sessionId}/turns/${turn.turnId}?wait=60`, 200);
  return state.status === 'completed' ? 0 : 1;
}

/** The child: the host, answering the parent's `measure` and `close`. */
async function runChild(fileDb: boolean): Promise<void> {
  const workspace = mkdtempSync(join(tmpdir(), 'turnchart-bench-'));
  // The database goes in a directory beside the workspace, so the session's tools never see it.
  const dbDir = fileDb ? mkdtempSync(join(tmpdir(), 'turnchart-bench-db-')) : null;
  const db = sqliteDatabase({ filename: dbDir ? join(dbDir, 'bench.db') : ':memory:' });
  const host = await startHost({
    host: '127.0.0.1',
    port: 0,
    workspace,
    model: stepModel(1, BENCH_TOOL),
    idleTtlSeconds: 0,
    storage: new KyselySessionStorage(db, { dialect: 'sqlite' }),
    runtime: { tools: [readTool(BENCH_TOOL)] },
  });
  const reply = (message: FromChild) => process.send!(message);
  const sqliteBytes = async () => {
    const pages = await sql<{ page_count: number }>`pragma page_count`.execute(db);
    const size = await sql<{ page_size: number }>`pragma page_size`.execute(db);
    return pages.rows[0]!.page_count * size.rows[0]!.page_size;
  };
  process.on('message', (message: ToChild) => {
    void (async () => {
      if (message.type === 'close') {
        await host.close();
        rmSync(workspace, { recursive: true, force: true });
        if (dbDir) rmSync(dbDir, { recursive: true, force: true });
        process.disconnect();
        return;
      }
      // Idle sessions close on a 0 ms timer: give the last one a moment, then collect garbage.
      const deadline = performance.now() + 2_000;
      while (host.runtime.openSessionCount > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setTimeout(resolve, 50));
      for (let i = 0; i < 4; i++) gcIfAvailable();
      const usage = process.memoryUsage();
      reply({
        type: 'sample',
        sample: {
          served: message.served,
          rss: usage.rss,
          heapUsed: usage.heapUsed,
          heapTotal: usage.heapTotal,
          external: usage.external,
          arrayBuffers: usage.arrayBuffers,
          sqliteBytes: await sqliteBytes(),
          openSessions: host.runtime.openSessionCount,
          settled: host.runtime.openSessionCount === 0,
        },
      });
    })();
  });
  reply({ type: 'ready', url: host.url });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--child')) await runChild(process.argv.includes('--file-db'));
  else {
    // Diagnostic use: `npx tsx bench/host-memory.ts [warmup] [sessions] [sampleEvery] [--file-db]`; with
    // --file-db the database is a file (WAL), so its pages are not in the host's memory.
    const [warmup = 1_000, sessions = 10_000, sampleEvery = 2_000] = process.argv.slice(2).filter((a) => !a.startsWith('--')).map(Number);
    const result = await measureHostMemory({ warmup, sessions, sampleEvery, fileDb: process.argv.includes('--file-db') });
    const mb = (bytes: number) => (bytes / MB).toFixed(1);
    for (const s of result.samples) {
      console.log(`${String(s.served).padStart(6)} rss ${mb(s.rss)} MB heapUsed ${mb(s.heapUsed)} MB heapTotal ${mb(s.heapTotal)} MB external ${mb(s.external)} MB sqlite ${mb(s.sqliteBytes)} MB open ${s.openSessions}`);
    }
    console.log(JSON.stringify({ ...result, samples: undefined }));
  }
}
