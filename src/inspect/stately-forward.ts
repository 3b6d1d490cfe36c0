import WebSocket from 'ws';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { sanitize } from './sanitize.js';

/** The protocol version `@statelyai/inspect` 0.7.2 stamps on every message. */
const STATELY_VERSION = '0.7.2';

/** How many messages wait for the connection before the oldest are dropped (the same bound as `@statelyai/inspect`'s). */
const MAX_DEFERRED = 200;

interface RefInternals {
  sessionId: string;
  id: string;
  _parent?: { sessionId: string };
  logic?: { config?: unknown };
}

/**
 * One XState inspection event as the message `@statelyai/inspect`'s WebSocket inspector sends for
 * it (`@xstate.actor`, `@xstate.event`, `@xstate.snapshot`; the rest are not sent), with contexts
 * and events sanitized as for the built-in page. Null for events Stately does not take.
 */
function statelyMessage(event: InspectionEvent, now: number = Date.now()): Record<string, unknown> | null {
  const ref = event.actorRef as unknown as RefInternals;
  const base = { _version: STATELY_VERSION, createdAt: String(now), id: null, rootId: event.rootId, sessionId: ref.sessionId };
  switch (event.type) {
    case '@xstate.actor': {
      const config = ref.logic?.config as { id?: string } | undefined;
      const name = ref.id === ref.sessionId && config?.id ? config.id : ref.id;
      return {
        ...base,
        type: '@xstate.actor',
        name,
        definition: definitionOf(config, name),
        parentId: ref._parent?.sessionId,
        snapshot: snapshotOf((event.actorRef as AnyActorRef).getSnapshot()),
      };
    }
    case '@xstate.event':
      return { ...base, type: '@xstate.event', event: sanitize(event.event), sourceId: (event.sourceRef as unknown as RefInternals | undefined)?.sessionId };
    case '@xstate.snapshot':
      return { ...base, type: '@xstate.snapshot', event: sanitize(event.event), snapshot: snapshotOf(event.snapshot) };
    default:
      return null;
  }
}

const definitions = new WeakMap<object, string>();

/** A machine's config as JSON, functions named (`{ type: name }`) as Stately's inspector writes them; one string per machine. */
function definitionOf(config: { id?: string } | undefined, name: string): string {
  if (typeof config !== 'object' || config === null) return JSON.stringify({ id: name });
  let text = definitions.get(config);
  if (text === undefined) {
    text = JSON.stringify(config, (_key, value: unknown) => (typeof value === 'function' ? { type: (value as { name: string }).name } : value));
    definitions.set(config, text);
  }
  return text;
}

/** A snapshot as its JSON form (what `snapshot.toJSON()` gives), the context sanitized, child actors as references. */
function snapshotOf(snapshot: unknown): Record<string, unknown> {
  const s = (snapshot ?? {}) as { status?: string; value?: unknown; context?: unknown; output?: unknown; error?: unknown; tags?: Set<string>; children?: Record<string, { id: string } | undefined> };
  const children: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(s.children ?? {})) if (child) children[key] = { xstate$$type: 1, id: child.id };
  return {
    status: s.status ?? 'active',
    ...(s.value !== undefined && { value: s.value }),
    context: sanitize(s.context),
    children,
    ...(s.output !== undefined && { output: sanitize(s.output) }),
    ...(s.error !== undefined && { error: sanitize(s.error) }),
    ...(s.tags !== undefined && { tags: [...s.tags] }),
    historyValue: {},
  };
}

export interface StatelyForward {
  /** The observer to give the runtime (`createRuntime({ inspect })`). */
  inspect(event: InspectionEvent): void;
  close(): Promise<void>;
}

/**
 * Forwards every session's inspection events to a WebSocket server in `@statelyai/inspect`'s
 * format — for example the relay that `@statelyai/inspect/server`'s `createInspectorServer()`
 * starts, which hands them to Stately's inspector. Events are converted a macrotask after they
 * happen, in batches; while the connection is down the newest 200 wait, and it reconnects every
 * `retryMs`.
 */
export function statelyForward(url: string, options: { warn?: (message: string) => void; retryMs?: number } = {}): StatelyForward {
  const warn = options.warn ?? (() => undefined);
  const retryMs = options.retryMs ?? 2_000;
  let socket: WebSocket | null = null;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | null = null;
  let pending: InspectionEvent[] = [];
  let deferred: string[] = [];
  let scheduled = false;
  let warned = false;

  const connect = (): void => {
    if (closed) return;
    const ws = new WebSocket(url);
    socket = ws;
    ws.on('open', () => {
      warned = false;
      for (const message of deferred) ws.send(message);
      deferred = [];
    });
    ws.on('error', (error) => {
      if (!warned) warn(`stately inspect: cannot reach ${url}: ${error.message}; retrying`);
      warned = true;
    });
    ws.on('close', () => {
      if (socket === ws) socket = null;
      if (!closed) retry = setTimeout(connect, retryMs);
    });
  };

  const send = (message: string): void => {
    if (socket?.readyState === WebSocket.OPEN) return socket.send(message);
    deferred.push(message);
    if (deferred.length > MAX_DEFERRED) deferred.splice(0, deferred.length - MAX_DEFERRED);
  };

  const flush = (): void => {
    scheduled = false;
    const batch = pending;
    pending = [];
    const now = Date.now();
    for (const event of batch) {
      const message = statelyMessage(event, now);
      if (message) send(JSON.stringify(message));
    }
  };

  connect();
  return {
    inspect(event) {
      if (closed || (event.type !== '@xstate.actor' && event.type !== '@xstate.event' && event.type !== '@xstate.snapshot')) return;
      pending.push(event);
      if (scheduled) return;
      scheduled = true;
      setImmediate(flush);
    },
    close() {
      closed = true;
      if (retry) clearTimeout(retry);
      flush();
      const ws = socket;
      if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
      return new Promise<void>((done) => {
        ws.once('close', () => done());
        ws.close();
      });
    },
  };
}
