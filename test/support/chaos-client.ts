import { setTimeout as delay } from 'node:timers/promises';

/**
 * The client side of the turn chaos runs (test/support/turn-chaos.ts): requests sent round-robin to
 * the hosts that are up, retried on 503/504 and on a dropped connection as a load balancer's client
 * would, and an event-stream follower that reconnects through the next host with `Last-Event-ID` and
 * checks, connection by connection, that the sequence runs on without a gap unless the host said
 * `snapshot_required`.
 */

export interface ClientStats {
  requests: number;
  retries: number;
  /** Retries after the connection failed or dropped (the host died under the request). */
  connectionErrors: number;
  /** Attempts that found no host up at all (the only host of a deployment restarting). */
  noHostUp: number;
  /** 503 answers, by error code. */
  unavailable: Record<string, number>;
  /** 504 OwnerTimeout answers. */
  timeouts: number;
  /** The slowest 503 OwnerUnavailable (ms from the request to its answer) of a request that is not a long poll: the issue asks for it to be fast. */
  slowestOwnerUnavailableMs: number;
  /** Which request that was. */
  slowestOwnerUnavailable: string;
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  /** An earlier attempt may have reached a host and been applied: its connection dropped before an answer. */
  ambiguous: boolean;
}

/** Thrown when a request found no host to answer it before its deadline. */
export class GaveUp extends Error {}

/** Never more than this between two attempts, whatever Retry-After says: the client would rather ask another host. */
const MAX_BACKOFF_MS = 1_000;
const DEFAULT_BACKOFF_MS = 100;

export class RoundRobin {
  private next = 0;
  readonly stats: ClientStats = { requests: 0, retries: 0, connectionErrors: 0, noHostUp: 0, unavailable: {}, timeouts: 0, slowestOwnerUnavailableMs: 0, slowestOwnerUnavailable: '' };

  constructor(
    /** The base URLs of the hosts up right now; a restarted host comes back on a new port. */
    private readonly hosts: () => string[],
    private readonly signal: AbortSignal,
  ) {}

  /** The next host in turn. */
  pick(): string {
    const hosts = this.hosts();
    if (hosts.length === 0) throw new GaveUp('no host is up');
    return hosts[this.next++ % hosts.length]!;
  }

  /**
   * One request, sent to the next host in turn and again to the next on 503, 504 or a connection
   * error, until a host answers anything else or `deadlineMs` passes. A request whose connection
   * dropped may have been applied: the answer says so.
   */
  async request(method: string, path: string, body?: unknown, options: { deadlineMs?: number; timeoutMs?: number } = {}): Promise<Answer> {
    const deadline = Date.now() + (options.deadlineMs ?? 120_000);
    let ambiguous = false;
    for (let attempt = 0; ; attempt++) {
      if (this.signal.aborted) throw new GaveUp(`the run was stopped during ${method} ${path}`);
      if (Date.now() > deadline) throw new GaveUp(`no host answered ${method} ${path} in time`);
      if (attempt > 0) this.stats.retries += 1;
      this.stats.requests += 1;
      let base: string;
      try {
        base = this.pick();
      } catch {
        this.stats.noHostUp += 1;
        await this.backoff(DEFAULT_BACKOFF_MS);
        continue;
      }
      const started = performance.now();
      let response: Response;
      let text: string;
      try {
        response = await fetch(base + path, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.any([this.signal, AbortSignal.timeout(options.timeoutMs ?? 30_000)]),
        });
        text = await response.text();
      } catch {
        // The host died under the request (or never answered): whatever it did may have happened.
        this.stats.connectionErrors += 1;
        ambiguous = method !== 'GET';
        await this.backoff(DEFAULT_BACKOFF_MS);
        continue;
      }
      const parsed = parseBody(text);
      if (response.status === 503 || response.status === 504) {
        const error = (parsed.error ?? {}) as { code?: string; retryAfterMs?: number };
        const code = error.code ?? String(response.status);
        if (response.status === 504) this.stats.timeouts += 1;
        else this.stats.unavailable[code] = (this.stats.unavailable[code] ?? 0) + 1;
        const took = performance.now() - started;
        // A long poll (`?wait`) may have waited on the owner before it died: not a measure of the answer's speed.
        if (code === 'OwnerUnavailable' && !path.includes('wait=') && took > this.stats.slowestOwnerUnavailableMs) {
          this.stats.slowestOwnerUnavailableMs = Math.round(took);
          this.stats.slowestOwnerUnavailable = `${method} ${path}`;
        }
        // A 504 may have been applied by the owner after the router gave up waiting.
        if (response.status === 504 && method !== 'GET') ambiguous = true;
        await this.backoff(typeof error.retryAfterMs === 'number' ? error.retryAfterMs : retryAfterHeader(response) ?? DEFAULT_BACKOFF_MS);
        continue;
      }
      return { status: response.status, body: parsed, ambiguous };
    }
  }

  /** The client's pause before its next attempt: Retry-After, capped, so a host that came back is found soon. */
  private backoff(ms: number): Promise<void> {
    return pause(Math.min(Math.max(ms, 20), MAX_BACKOFF_MS), this.signal);
  }
}

/** A wait of the client's own (a backoff, a user's think time) that `signal` cuts short; its abort listener goes with it. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}

function parseBody(text: string): Record<string, unknown> {
  if (text === '') return {};
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { text };
  }
}

function retryAfterHeader(response: Response): number | null {
  const value = Number(response.headers.get('retry-after'));
  return Number.isFinite(value) && value > 0 ? value * 1000 : null;
}

/** One update envelope of a session's stream. */
export interface StreamEnvelope {
  sequence: number;
  turnId: string;
  update: { type: string } & Record<string, unknown>;
}

/** What the follower saw on one connection. */
export interface StreamConnection {
  host: string;
  /** The `Last-Event-ID` it was opened with; null for a first connection. */
  resumedFrom: number | null;
  status: number | 'failed';
  /** A refused connection's error code. */
  refusedWith?: string;
  /** How the host started it: a snapshot (new client), `snapshot_required`, a replay, or not at all. */
  start: 'snapshot' | 'snapshot_required' | 'replay' | 'none';
  updates: number;
}

export interface FollowerHandlers {
  update(envelope: StreamEnvelope): void;
  /** The snapshot a connection started with (`snapshot` or `snapshot_required`). */
  snapshot(snapshot: Record<string, unknown>): void;
}

/**
 * Follows one session's events through the round-robin hosts for as long as it runs: a stream that
 * ends (its host died, or saw the owner go) is opened again on the next host with the last id seen.
 */
export class Follower {
  lastEventId: number | null = null;
  readonly connections: StreamConnection[] = [];
  /** Sequence breaks: a gap, or a repeat, with no `snapshot_required` to say so. */
  readonly problems: string[] = [];
  private readonly stopper = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly client: RoundRobin,
    private readonly sessionId: string,
    private readonly handlers: FollowerHandlers,
  ) {}

  start(): void {
    this.loop = this.follow();
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    await this.loop;
  }

  private async follow(): Promise<void> {
    while (!this.stopper.signal.aborted) {
      let host: string;
      try {
        host = this.client.pick();
      } catch {
        await this.pause(DEFAULT_BACKOFF_MS);
        continue;
      }
      const connection: StreamConnection = { host, resumedFrom: this.lastEventId, status: 'failed', start: 'none', updates: 0 };
      this.connections.push(connection);
      const retryAfter = await this.connect(connection).catch(() => DEFAULT_BACKOFF_MS);
      // A connection that carried nothing is not worth reopening at once: the hosts are busy taking over.
      if (connection.updates === 0 && connection.start === 'none') await this.pause(retryAfter);
    }
  }

  /** One connection, read to its end; resolves with how long to wait before the next when it was refused. */
  private async connect(connection: StreamConnection): Promise<number> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (connection.resumedFrom !== null) headers['last-event-id'] = String(connection.resumedFrom);
    const response = await fetch(`${connection.host}/sessions/${this.sessionId}/events`, { headers, signal: this.stopper.signal });
    connection.status = response.status;
    if (response.status !== 200) {
      const body = parseBody(await response.text()) as { error?: { code?: string; retryAfterMs?: number } };
      connection.refusedWith = `${response.status} ${body.error?.code ?? ''}`;
      return body.error?.retryAfterMs ?? retryAfterHeader(response) ?? DEFAULT_BACKOFF_MS;
    }
    let expected: number | null = connection.resumedFrom === null ? null : connection.resumedFrom + 1;
    let first = true;
    for await (const event of sseEvents(response.body!)) {
      if (event.event === 'snapshot' || event.event === 'snapshot_required') {
        if (!first) this.problems.push(`${this.sessionId}: '${event.event}' in the middle of a stream on ${connection.host}`);
        connection.start = event.event;
        const snapshot = JSON.parse(event.data) as Record<string, unknown>;
        const at = Number(snapshot.lastUpdateSequence);
        if (event.event === 'snapshot' && connection.resumedFrom !== null && at !== connection.resumedFrom) {
          this.problems.push(`${this.sessionId}: resumed after ${connection.resumedFrom} on ${connection.host}, got a plain snapshot at ${at}`);
        }
        expected = at + 1;
        this.lastEventId = at;
        first = false;
        this.handlers.snapshot(snapshot);
        continue;
      }
      if (event.event !== 'message') continue;
      const envelope = JSON.parse(event.data) as StreamEnvelope;
      if (first) connection.start = 'replay';
      first = false;
      if (expected !== null && envelope.sequence !== expected) {
        this.problems.push(
          `${this.sessionId}: on ${connection.host} (resumed from ${connection.resumedFrom ?? 'none'}) expected sequence ${expected}, got ${envelope.sequence} (${envelope.update.type})`,
        );
      }
      expected = envelope.sequence + 1;
      this.lastEventId = envelope.sequence;
      connection.updates += 1;
      this.handlers.update(envelope);
    }
    return DEFAULT_BACKOFF_MS;
  }

  private pause(ms: number): Promise<void> {
    return pause(Math.min(Math.max(ms, 20), MAX_BACKOFF_MS), this.stopper.signal);
  }
}

interface RawEvent {
  event: string;
  id: string | null;
  data: string;
}

/** The events of an SSE body as an EventSource parses them (comments and `retry:` dropped); ends quietly when the connection does. */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<RawEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        let id: string | null = null;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const name = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (name === 'event') event = value;
          else if (name === 'id') id = value;
          else if (name === 'data') data.push(value);
        }
        if (data.length > 0) yield { event, id, data: data.join('\n') };
      }
    }
  } catch {
    // The host went away mid-stream: the follower opens the next connection.
  }
}
