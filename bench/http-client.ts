/**
 * The client half of the HTTP figures: an HTTP client per kind (node:http or Node's fetch), and one
 * round's requests — sessions, their SSE clients, the turns — as a client elsewhere sends them.
 * `http-client-process.ts` runs it in a process of its own, so the host under test does not share
 * its event loop with its clients.
 */
import * as http from 'node:http';
import type { UpdateEnvelope } from '../src/index.js';

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes of one machine. */
export const epochNow = (): number => performance.timeOrigin + performance.now();

/** The user's text of a bench turn: the model reads the session id from it to stamp its deltas. */
export const turnText = (sessionId: string) => `read the files for ${sessionId}`;

export interface ClientRoundOptions {
  sessions: number;
  turnsPerSession: number;
}

/** When the round's turns started and when the last subscriber saw its last `turn_finished` (`epochNow`). */
export interface ClientRoundTimes {
  startedAt: number;
  finishedAt: number;
}

/** Counts `turn_finished` per session so a round can wait until every subscriber has seen its last one. */
export class FinishLine {
  private readonly finished = new Map<string, number>();
  private readonly waiting = new Map<string, { count: number; done: () => void }>();

  finish(sessionId: string): void {
    const count = (this.finished.get(sessionId) ?? 0) + 1;
    this.finished.set(sessionId, count);
    const waiter = this.waiting.get(sessionId);
    if (waiter && count >= waiter.count) {
      this.waiting.delete(sessionId);
      waiter.done();
    }
  }

  reached(sessionId: string, count: number): Promise<void> {
    if ((this.finished.get(sessionId) ?? 0) >= count) return Promise.resolve();
    return new Promise((done) => this.waiting.set(sessionId, { count, done }));
  }
}

/** What a round needs from an HTTP client; `nodeHttpClient` (node:http) or `fetchClient` (Node's fetch). */
export interface BenchClient {
  post<T>(path: string, body: unknown, status: number): Promise<T>;
  get<T>(path: string, status: number): Promise<T>;
  /**
   * An SSE client on `path`: resolves once its `event: snapshot` has arrived (it is subscribed), then
   * hands every update envelope to `onEnvelope` until the stream ends or the client is closed.
   */
  follow(path: string, onEnvelope: (envelope: UpdateEnvelope) => void): Promise<{ done: Promise<void> }>;
  /** Ends the event streams and frees pooled connections. */
  close(): void;
}

export type ClientKind = 'node-http' | 'fetch';

function checked<T>(status: number, expected: number, text: string): T {
  if (status !== expected) throw new Error(`HTTP ${status} (expected ${expected}): ${text}`);
  return JSON.parse(text) as T;
}

/** Splits an SSE byte stream (already decoded) into events; envelopes go to `onEnvelope`, the snapshot to `onSnapshot`. */
function sseParser(onEnvelope: (envelope: UpdateEnvelope) => void, onSnapshot: () => void): (text: string) => void {
  let buffer = '';
  return (text) => {
    buffer += text;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (event === 'snapshot') onSnapshot();
      else if (event === 'message' && data !== '') onEnvelope(JSON.parse(data) as UpdateEnvelope);
    }
  };
}

/** node:http with a keep-alive agent for requests; each event stream on its own connection. */
export function nodeHttpClient(base: string): BenchClient {
  const agent = new http.Agent({ keepAlive: true });
  const streams: http.ClientRequest[] = [];
  const send = <T>(method: string, path: string, body: unknown, status: number) =>
    new Promise<T>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: http.OutgoingHttpHeaders = payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
      const request = http.request(`${base}${path}`, { method, agent, headers }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('error', reject);
        response.on('end', () => {
          try {
            resolve(checked<T>(response.statusCode ?? 0, status, text));
          } catch (error) {
            reject(error as Error);
          }
        });
      });
      request.on('error', reject);
      request.end(payload);
    });
  return {
    post: (path, body, status) => send('POST', path, body, status),
    get: (path, status) => send('GET', path, undefined, status),
    follow: (path, onEnvelope) =>
      new Promise((resolve, reject) => {
        const request = http.get(`${base}${path}`, { agent: false, headers: { accept: 'text/event-stream' } }, (response) => {
          if (response.statusCode !== 200) return reject(new Error(`events: HTTP ${response.statusCode}`));
          const done = new Promise<void>((ended) => {
            response.on('close', () => {
              ended();
              // Nothing once the snapshot has resolved this promise.
              reject(new Error('event stream ended before its snapshot'));
            });
            response.on('error', () => ended());
          });
          response.setEncoding('utf8');
          response.on('data', sseParser(onEnvelope, () => resolve({ done })));
        });
        request.on('error', (error) => (request.destroyed && streams.includes(request) ? undefined : reject(error)));
        streams.push(request);
      }),
    close: () => {
      for (const request of streams) request.destroy();
      agent.destroy();
    },
  };
}

/** Node's fetch (undici): the body read as text for requests, `response.body` read for event streams. */
export function fetchClient(base: string): BenchClient {
  const abort = new AbortController();
  const send = async <T>(path: string, init: RequestInit, status: number): Promise<T> => {
    const response = await fetch(`${base}${path}`, init);
    return checked<T>(response.status, status, await response.text());
  };
  return {
    post: (path, body, status) => send(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }, status),
    get: (path, status) => send(path, {}, status),
    async follow(path, onEnvelope) {
      const response = await fetch(`${base}${path}`, { signal: abort.signal, headers: { accept: 'text/event-stream' } });
      if (response.status !== 200 || !response.body) throw new Error(`events: HTTP ${response.status}`);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let connected!: () => void;
      const subscribed = new Promise<void>((resolve) => (connected = resolve));
      const parse = sseParser(onEnvelope, () => connected());
      const done = (async () => {
        try {
          for (;;) {
            const { done: ended, value } = await reader.read();
            if (ended) return;
            parse(decoder.decode(value, { stream: true }));
          }
        } catch (error) {
          if (!abort.signal.aborted) throw error;
        }
      })();
      await Promise.race([subscribed, done.then(() => Promise.reject(new Error('event stream ended before its snapshot')))]);
      return { done };
    },
    close: () => abort.abort(),
  };
}

/**
 * One round's client side: creates the sessions, connects an SSE client to each (before the clock
 * starts), then runs every session's turns one after another (`POST` the turn, `GET ?wait`), and ends
 * once every SSE client has seen its session's last `turn_finished`. Each text delta's arrival goes
 * to `onDelta` as soon as its event is parsed; `onFinished` is told the round's times at its end,
 * before the streams are closed.
 */
export async function clientRound(
  client: BenchClient,
  options: ClientRoundOptions,
  onDelta: (sessionId: string, text: string) => void,
  onFinished: (times: ClientRoundTimes) => void = () => undefined,
): Promise<ClientRoundTimes> {
  const finishLine = new FinishLine();
  const ids: string[] = [];
  for (let i = 0; i < options.sessions; i++) ids.push((await client.post<{ sessionId: string }>('/sessions', { permissionMode: 'auto' }, 201)).sessionId);
  const onEnvelope = (envelope: UpdateEnvelope) => {
    const update = envelope.update;
    if (update.type === 'text_delta') onDelta(envelope.sessionId, update.text);
    else if (update.type === 'turn_finished') finishLine.finish(envelope.sessionId);
  };
  const streams = await Promise.all(ids.map((id) => client.follow(`/sessions/${id}/events`, onEnvelope)));
  const startedAt = epochNow();
  await Promise.all(
    ids.map(async (id) => {
      for (let t = 0; t < options.turnsPerSession; t++) {
        const input = [{ type: 'text', text: turnText(id) }];
        const turn = await client.post<{ turnId: string }>(`/sessions/${id}/turns`, { clientRequestId: `r${t}`, input }, 202);
        const state = await client.get<{ status: string }>(`/sessions/${id}/turns/${turn.turnId}?wait=60`, 200);
        if (state.status !== 'completed') throw new Error(`HTTP bench turn did not complete: ${JSON.stringify(state)}`);
      }
      await finishLine.reached(id, options.turnsPerSession);
    }),
  );
  const finishedAt = epochNow();
  onFinished({ startedAt, finishedAt });
  client.close();
  await Promise.all(streams.map((s) => s.done));
  return { startedAt, finishedAt };
}
