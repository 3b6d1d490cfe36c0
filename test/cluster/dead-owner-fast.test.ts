import { readdir, readFile, readlink } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterDatabase, clusterHost, clusterSkipReason, streamOf } from '../support/cluster-hosts.js';
import { call } from '../support/host.js';
import type { HostProcess } from '../support/host-process.js';
import { until } from '../support/poll.js';
import type { SseClient } from '../support/sse-client.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-cluster-dead-');

/** Large on purpose: an answer that came from the route timeout would take this long, so none can pass by timing out. */
const ROUTE_TIMEOUT_S = 30;
/** What "noticed fast" means (issue 26): a dead owner's sessions answer within this, not after the route timeout. */
const FAST_MS = 1_000;

interface Timed {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
  ms: number;
}

/** Past this the client gives up (status 0), so an answer that would come from a timeout fails the test by its assertions. */
const CLIENT_GIVES_UP_MS = 10_000;

/** One request, its status, `Retry-After` and body, and how long it took to answer. */
async function timed(url: string, method: string, body?: unknown): Promise<Timed> {
  const started = performance.now();
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(CLIENT_GIVES_UP_MS),
  }).catch(() => null);
  if (!response) return { status: 0, retryAfter: null, body: {}, ms: performance.now() - started };
  const text = await response.text();
  const ms = performance.now() - started;
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), ms };
}

function expectOwnerUnavailable(answer: Timed): void {
  expect(answer).toMatchObject({ status: 503, body: { error: { code: 'OwnerUnavailable', retryAfterMs: expect.any(Number) } } });
  expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
}

/**
 * Bytes the broker has sent a process that it has not read: the receive queues of its sockets to the
 * broker's port (/proc/net/tcp). While the process is stopped, growth means the broker delivered
 * something to it — a routed command now in the owner's hands, where only its death can lose it.
 */
async function unreadFromBroker(pid: number): Promise<number> {
  const port = Number(new URL(process.env.TEST_AMQP_URL!).port || 5672);
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const socket = /^socket:\[(\d+)\]$/.exec(target);
    if (socket) inodes.add(socket[1]!);
  }
  let unread = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = (await readFile(table, 'utf8').catch(() => '')).split('\n').slice(1);
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || !inodes.has(fields[9]!)) continue;
      if (Number.parseInt(fields[2]!.split(':')[1]!, 16) !== port) continue;
      unread += Number.parseInt(fields[4]!.split(':')[1]!, 16);
    }
  }
  return unread;
}

describe.skipIf(clusterSkipReason !== null)('a dead owner is noticed fast (issue 26)', { timeout: 90_000 }, () => {
  const hosts: HostProcess[] = [];
  const streams: SseClient[] = [];
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    for (const host of hosts.splice(0)) {
      host.kill('SIGKILL');
      await host.exited;
    }
    await drop?.();
    drop = undefined;
  });

  it('the owner SIGKILLed while a tool runs: the turn, the session, a command and a chat through the other host answer 503 OwnerUnavailable with Retry-After at once — one in flight on the owner included — then the lease rules hand the session over', async () => {
    const db = clusterDatabase();
    drop = db.drop;
    const workspace = await tempDir();
    // A long lease, so every request below meets the dead owner's lease still running (the 503 case), on a busy machine too.
    const common = { databaseUrl: db.url, workspace, extra: ['--lease-ttl', '10', '--route-timeout', String(ROUTE_TIMEOUT_S)] };
    const [a, b] = await Promise.all([
      // The command outlives the test: the turn is mid-tool whenever A is killed (it dies with A where Linux allows, else ends by itself).
      clusterHost({ ...common, name: 'a', replies: [{ text: 'working', toolCalls: [{ name: 'run_command', args: { command: 'sleep 120' } }] }] }),
      clusterHost({ ...common, name: 'b', replies: [{ text: 'back on b' }] }),
    ]);
    hosts.push(a, b);

    const sessionId = (await call(a.url, 'POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
    const onA = await streamOf(a.url, sessionId);
    streams.push(onA);
    const turn = await call(b.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'long', input: [{ type: 'text', text: 'run it' }] });
    expect(turn).toMatchObject({ status: 202, body: { status: 'running' } });
    const turnId = turn.body.turnId as string;
    await onA.nextUpdate('tool_call_started');
    onA.close();

    // A request already in A's hands when it dies: a client's long poll of the turn. A is stopped first so that
    // the request is surely delivered to it (its socket holds it unread) before the kill — the case a
    // mandatory publish's return never covers, since the broker routed it while A's queue still existed.
    const pid = a.child.pid!;
    a.kill('SIGSTOP');
    const before = await unreadFromBroker(pid);
    const longPoll = timed(`${b.url}/sessions/${sessionId}/turns/${turnId}?wait=60`, 'GET');
    // More than a heartbeat frame (8 bytes) can account for: a routed request is hundreds.
    await until('the long poll to be delivered to the stopped owner', async () => (await unreadFromBroker(pid)) > before + 64);
    const killedAt = performance.now();
    a.kill('SIGKILL');
    await a.exited;
    const held = await longPoll;
    expectOwnerUnavailable(held);
    // Measured from the kill: before it the request was held by a stopped owner, as it would be by a live one.
    expect(performance.now() - killedAt).toBeLessThan(FAST_MS);

    // Requests sent now, A's queue gone: each answers at once, none waits for the route timeout. (Event
    // streams and the chat's resume stream instead wait for the lease, as documented: their clients give up on a 503.)
    const answers = {
      turn: await timed(`${b.url}/sessions/${sessionId}/turns/${turnId}`, 'GET'),
      session: await timed(`${b.url}/sessions/${sessionId}`, 'GET'),
      command: await timed(`${b.url}/sessions/${sessionId}/turns`, 'POST', { clientRequestId: 'again', input: [{ type: 'text', text: 'are you there' }] }),
      cancel: await timed(`${b.url}/sessions/${sessionId}/turns/${turnId}/cancel`, 'POST'),
      chat: await timed(`${b.url}/api/chat`, 'POST', { id: sessionId, messages: [{ id: 'u-again', role: 'user', parts: [{ type: 'text', text: 'are you there' }] }] }),
    };
    for (const [what, answer] of Object.entries(answers)) {
      expectOwnerUnavailable(answer);
      expect(answer.ms, what).toBeLessThan(FAST_MS);
    }

    // Then the lease rules decide: once A's lease runs out B takes the session and answers for it itself (what
    // becomes of the turn A left mid-tool is the takeover's business, tested with it: test/cluster/owner-killed.test.ts).
    await until('B to take the session once the lease runs out', async () => (await call(b.url, 'GET', `/sessions/${sessionId}/turns/${turnId}`)).status === 200, 30_000);
    expect(await call(b.url, 'GET', `/sessions/${sessionId}`)).toMatchObject({ status: 200, body: { sessionId } });
  });
});
