/**
 * One client process of the 5 000-stream figures (`sse-5000.ts` forks several): a share of the
 * sessions, an SSE client on each, and the turns of the share's active sessions, as clients
 * elsewhere send them. Several processes, so that one client's event loop is not what holds
 * 5 000 streams' events back.
 *
 * Messages (IPC), one at a time:
 * - `setup`: creates `count` sessions (`POST /sessions`) and connects an SSE client to each, every
 *   one past its `event: snapshot` before it answers;
 * - `run`: the first `active` sessions each run `turnsPerSession` turns (`POST …/turns` +
 *   `GET …/turns/:turnId?wait=60`); answers once each of their streams has seen its last
 *   `turn_finished`, with every text delta's arrival (`epochNow`) and what the idle streams got;
 * - `close`: ends the streams, answers how many had ended before (dropped by the host).
 */
import * as http from 'node:http';
import { epochNow, FinishLine, turnText } from './http-client.js';
import type { DeltaArrival } from './http-client-process.js';
import type { UpdateEnvelope } from '../src/index.js';
import { messageOf } from '../src/protocol/error-message.js';

export type StreamsRequest =
  | { kind: 'setup'; base: string; count: number; concurrency: number }
  | { kind: 'run'; active: number; turnsPerSession: number }
  | { kind: 'close' };

export interface StreamsRunReply {
  startedAt: number;
  finishedAt: number;
  arrivals: DeltaArrival[];
  /** Idle streams (no turn of their own) that got at least one heartbeat comment during the run. */
  idleWithHeartbeat: number;
  idle: number;
  heartbeats: number;
}

export type StreamsReply =
  | { ok: true; kind: 'setup'; sessions: number }
  | ({ ok: true; kind: 'run' } & StreamsRunReply)
  | { ok: true; kind: 'close'; dropped: number; droppedBeforeClose: string[] }
  | { ok: false; message: string };

interface Stream {
  sessionId: string;
  request: http.ClientRequest;
  /** The host ended the stream (or the connection broke) before the client closed it. */
  ended: boolean;
  heartbeats: number;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
let base = '';
const streams: Stream[] = [];
let closing = false;
let onEnvelope: (envelope: UpdateEnvelope) => void = () => undefined;

/**
 * A request that the host's keep-alive timeout raced (the agent reused a connection as the host
 * closed it: "socket hang up", ECONNRESET) is sent once more when it may be: a turn's `POST` is
 * idempotent by its `clientRequestId`, a `GET` always. Creating a session is not retried.
 */
async function retried<T>(method: string, path: string, body: unknown, status: number): Promise<T> {
  try {
    return await send<T>(method, path, body, status);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ECONNRESET' && code !== 'EPIPE') throw error;
    return send<T>(method, path, body, status);
  }
}

function send<T>(method: string, path: string, body: unknown, status: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: http.OutgoingHttpHeaders = payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
    const request = http.request(`${base}${path}`, { method, agent, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('error', reject);
      response.on('end', () => {
        if (response.statusCode !== status) reject(new Error(`${method} ${path}: HTTP ${response.statusCode} (expected ${status}): ${text}`));
        else resolve(JSON.parse(text) as T);
      });
    });
    request.on('error', reject);
    request.end(payload);
  });
}

/** An SSE client on the session's events, resolved once its snapshot has arrived. */
function follow(sessionId: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let connected = false;
    const request = http.get(`${base}/sessions/${sessionId}/events`, { agent: false, headers: { accept: 'text/event-stream' } }, (response) => {
      if (response.statusCode !== 200) return reject(new Error(`events: HTTP ${response.statusCode}`));
      response.setEncoding('utf8');
      response.on('data', (text: string) => {
        buffer += text;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(':')) {
            stream.heartbeats += 1;
            continue;
          }
          let event = 'message';
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (event === 'snapshot' && !connected) {
            connected = true;
            resolve(stream);
          } else if (event === 'message' && data !== '') onEnvelope(JSON.parse(data) as UpdateEnvelope);
        }
      });
      response.on('close', () => {
        if (!closing) stream.ended = true;
        if (!connected) reject(new Error('event stream ended before its snapshot'));
      });
    });
    const stream: Stream = { sessionId, request, ended: false, heartbeats: 0 };
    request.on('error', (error) => {
      if (!closing) stream.ended = true;
      if (!connected) reject(error);
    });
  });
}

/** Runs `work` over `items`, `concurrency` at a time. */
async function pooled<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

async function setup(request: Extract<StreamsRequest, { kind: 'setup' }>): Promise<StreamsReply> {
  base = request.base;
  const ids: string[] = [];
  const slots = Array.from({ length: request.count }, (_, i) => i);
  await pooled(slots, request.concurrency, async () => {
    ids.push((await send<{ sessionId: string }>('POST', '/sessions', { permissionMode: 'auto' }, 201)).sessionId);
  });
  // Connecting a few at a time keeps the host's accept backlog from overflowing.
  await pooled(ids, request.concurrency, async (id) => {
    streams.push(await follow(id));
  });
  return { ok: true, kind: 'setup', sessions: streams.length };
}

async function run(request: Extract<StreamsRequest, { kind: 'run' }>): Promise<StreamsReply> {
  const active = streams.slice(0, request.active);
  const idle = streams.slice(request.active);
  const beatsBefore = idle.map((stream) => stream.heartbeats);
  const finishLine = new FinishLine();
  const arrivals: DeltaArrival[] = [];
  onEnvelope = (envelope) => {
    const update = envelope.update;
    if (update.type === 'text_delta') arrivals.push([envelope.sessionId, update.text, epochNow()]);
    else if (update.type === 'turn_finished') finishLine.finish(envelope.sessionId);
  };
  const startedAt = epochNow();
  await Promise.all(
    active.map(async ({ sessionId }) => {
      for (let t = 0; t < request.turnsPerSession; t++) {
        const input = [{ type: 'text', text: turnText(sessionId) }];
        const turn = await retried<{ turnId: string }>('POST', `/sessions/${sessionId}/turns`, { clientRequestId: `r${t}`, input }, 202);
        const state = await retried<{ status: string }>('GET', `/sessions/${sessionId}/turns/${turn.turnId}?wait=60`, undefined, 200);
        if (state.status !== 'completed') throw new Error(`turn did not complete: ${JSON.stringify(state)}`);
      }
      await finishLine.reached(sessionId, request.turnsPerSession);
    }),
  );
  const finishedAt = epochNow();
  const gained = idle.map((stream, i) => stream.heartbeats - beatsBefore[i]!);
  return {
    ok: true,
    kind: 'run',
    startedAt,
    finishedAt,
    arrivals,
    idle: idle.length,
    idleWithHeartbeat: gained.filter((n) => n > 0).length,
    heartbeats: gained.reduce((a, b) => a + b, 0),
  };
}

function close(): StreamsReply {
  const dropped = streams.filter((stream) => stream.ended);
  closing = true;
  for (const stream of streams) stream.request.destroy();
  agent.destroy();
  return { ok: true, kind: 'close', dropped: dropped.length, droppedBeforeClose: dropped.slice(0, 5).map((stream) => stream.sessionId) };
}

process.on('message', (request: StreamsRequest | 'exit') => {
  if (request === 'exit') {
    process.disconnect();
    return;
  }
  const answer = request.kind === 'setup' ? setup(request) : request.kind === 'run' ? run(request) : Promise.resolve(close());
  void answer.then(
    (reply) => process.send!(reply),
    (error: unknown) => process.send!({ ok: false, message: `${request.kind}: ${messageOf(error)}` } satisfies StreamsReply),
  );
});

// The bench gave up (or ended): nothing is left to answer, and the streams go with the process.
process.on('disconnect', () => process.exit(0));
