import { setTimeout as delay } from 'node:timers/promises';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import { ChatError, type AgentSummary, type ChatClient, type ChatCommandName, type ContextUsage, type Feed, type FeedEvent, type SessionInfo, type SessionSummary } from './chat-client.js';
import { errorOf, followEventStream, unreachable } from './chat-sse.js';
import { ToolCallIndex, type StoredPage } from './chat-tool-calls.js';
import type { SessionSnapshot } from '../protocol/session-snapshot.js';
import { messageOf } from '../protocol/error-message.js';
import { commandOkOf, type CommandInput, type CommandOk } from '../protocol/command-catalog.js';

export interface HttpClientOptions {
  /** The host's base URL, e.g. `http://127.0.0.1:4477`. */
  url: string;
  token?: string | null;
  /** A request the host has not answered after this long fails `HostTimeout`. Default 30 s. */
  requestTimeoutMs?: number;
  /**
   * How long a request is tried again while the host is away — it refused or dropped the connection
   * (restarting), or a load balancer or the cluster said its owner is unavailable — before it fails
   * with that error. Default 60 s: a dead owner's lease (30 s by default) runs out well within it.
   */
  retryForMs?: number;
}

/**
 * What a request gets while the host is away rather than refusing it: no answer (restarting, or
 * killed), a proxy's 502/503/504 without the host's JSON, or the cluster's 503s for an owner that
 * is gone or a broker that is away. Each ends by itself; the request is sent again.
 */
const HOST_AWAY = new Set(['HostUnreachable', 'OwnerUnavailable', 'TransportUnavailable', 'Http502', 'Http503', 'Http504']);

/** The first wait before a request is sent again, doubled up to `RETRY_MAX_MS`. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 2_000;

const segment = encodeURIComponent;

/** The route each command takes, under its session's path, and its body. */
const ROUTES: { [K in ChatCommandName]: (input: CommandInput<K>) => { method: string; path: string; body?: unknown } } = {
  submitTurn: ({ clientRequestId, input }) => ({ method: 'POST', path: '/turns', body: { clientRequestId, input } }),
  cancelTurn: (turnId) => ({ method: 'POST', path: `/turns/${segment(turnId)}/cancel` }),
  resolvePermission: ({ turnId, toolCallId, decision }) => ({ method: 'POST', path: `/turns/${segment(turnId)}/permissions/${segment(toolCallId)}`, body: { decision } }),
  setPermissionMode: (mode) => ({ method: 'PUT', path: '/permission-mode', body: { mode } }),
  compactConversation: () => ({ method: 'POST', path: '/compact' }),
};

/** The chat client against a running host: its HTTP API, and its event stream for live updates. */
export function httpChatClient(options: HttpClientOptions): ChatClient {
  const base = options.url.replace(/\/+$/, '');
  const auth: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const timeoutMs = options.requestTimeoutMs ?? 30_000;
  const retryForMs = options.retryForMs ?? 60_000;
  const indexes = new Map<string, ToolCallIndex>();
  const feeds = new Set<Feed>();
  /** Aborted by `close()`: a request waiting to be sent again gives up. */
  const closing = new AbortController();
  /** Once the host has answered, it can go away and come back; before, an unreachable one is a wrong URL or a host not started. */
  let reached = false;

  /**
   * One request, sent again while the host is away (`HOST_AWAY`) until it answers or `retryForMs`
   * has passed: the chat pauses rather than fails while a host restarts or its sessions move (issue
   * 26); a host that has never answered fails at once. Every command is safe to send twice: a
   * turn's `clientRequestId` answers with the same turn, and an approval answered twice is refused
   * as no longer pending (see `command`). `attempts.retried` is set once an attempt failed, so an
   * earlier one may have taken effect.
   */
  async function call<T>(method: string, route: string, body?: unknown, attempts: { retried: boolean } = { retried: false }): Promise<T> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return await once<T>(method, route, body);
      } catch (error) {
        const wait = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** attempt);
        if (!reached || !(error instanceof ChatError) || !HOST_AWAY.has(error.code) || closing.signal.aborted || Date.now() - started + wait > retryForMs) throw error;
        attempts.retried = true;
        await delay(wait, undefined, { signal: closing.signal }).catch(() => undefined);
        if (closing.signal.aborted) throw error;
      }
    }
  }

  async function once<T>(method: string, route: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(base + route, {
        method,
        headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw unreachable(base, error);
    }
    reached = true;
    if (!response.ok) throw await errorOf(response);
    try {
      return (await response.json()) as T;
    } catch (error) {
      throw new ChatError('InvalidResponse', `the host's answer to ${method} ${route} is not JSON: ${messageOf(error)}`);
    }
  }

  const session = (id: string) => `/sessions/${encodeURIComponent(id)}`;

  /** A command's route; its answer is the command's success (a turn's answer says so by its status, not by `ok`). */
  async function command<K extends ChatCommandName>(name: K, sessionId: string, input: CommandInput<K>): Promise<CommandOk<K>> {
    const { method, path, body } = ROUTES[name](input);
    const attempts = { retried: false };
    let answer: unknown;
    try {
      answer = await call<unknown>(method, session(sessionId) + path, body, attempts);
    } catch (error) {
      // An approval answer whose first attempt went unanswered may have been taken then: what came of
      // it — its `permission_resolved`, or the approval asked again — comes through the updates.
      if (!(name === 'resolvePermission' && attempts.retried && error instanceof ChatError && error.code === 'PermissionNotPending')) throw error;
      answer = {};
    }
    const ok = commandOkOf(name, Object.assign({ ok: true }, answer));
    if (ok) return ok;
    throw new ChatError('InvalidResponse', `the host's answer to ${method} ${session(sessionId) + path} is not what ${name} answers`);
  }

  return {
    kind: 'host',
    description: base,

    async createSession({ permissionMode, agent }) {
      const created = await call<{ sessionId: string; snapshot: SessionSnapshot }>('POST', '/sessions', { ...(permissionMode && { permissionMode }), ...(agent !== undefined && { agent }) });
      return { sessionId: created.sessionId, snapshot: created.snapshot, ...(agent !== undefined && { agent }) };
    },

    async openSession(sessionId): Promise<SessionInfo> {
      return { sessionId, snapshot: await call<SessionSnapshot>('GET', session(sessionId)) };
    },

    async listAgents() {
      return (await call<{ agents: AgentSummary[] }>('GET', '/agents')).agents;
    },

    async listSessions(limit) {
      return (await call<{ sessions: SessionSummary[] }>('GET', `/sessions?limit=${limit}`)).sessions;
    },

    submitTurn: (sessionId, input) => command('submitTurn', sessionId, input),
    cancelTurn: (sessionId, turnId) => command('cancelTurn', sessionId, turnId),
    resolvePermission: (sessionId, input) => command('resolvePermission', sessionId, input),
    setPermissionMode: (sessionId, mode) => command('setPermissionMode', sessionId, mode),
    compactConversation: (sessionId) => command('compactConversation', sessionId, undefined),

    async turnStatus(sessionId, turnId) {
      return call<{ status: string; outcome?: TurnOutcome }>('GET', `${session(sessionId)}/turns/${encodeURIComponent(turnId)}`);
    },

    async context(sessionId): Promise<ContextUsage> {
      const preview = await call<{
        budget: { systemContextTokens: number; conversationTokens: number; toolSurfaceTokens: number; reservedOutputTokens: number };
        autoCompactTokenLimit: number;
        percentUsed: number;
      }>('GET', `${session(sessionId)}/context`);
      return {
        system: preview.budget.systemContextTokens,
        conversation: preview.budget.conversationTokens,
        tools: preview.budget.toolSurfaceTokens,
        reservedOutput: preview.budget.reservedOutputTokens,
        autoCompactLine: preview.autoCompactTokenLimit,
        // The API does not tell the model's window; the line is 85 % of the usable input.
        window: Math.round(preview.autoCompactTokenLimit / 0.85) + preview.budget.reservedOutputTokens,
        percentUsed: preview.percentUsed,
      };
    },

    async toolCall(sessionId, toolCallId) {
      let index = indexes.get(sessionId);
      if (!index) {
        index = new ToolCallIndex((after, limit) => call<StoredPage>('GET', `${session(sessionId)}/messages?after=${after}&limit=${limit}`));
        indexes.set(sessionId, index);
      }
      return index.find(toolCallId);
    },

    follow(sessionId, listener): Feed {
      let markReady: () => void = () => undefined;
      let refuse: (error: ChatError) => void = () => undefined;
      let connected = false;
      const ready = new Promise<void>((resolve, reject) => {
        markReady = resolve;
        refuse = reject;
      });
      // A rejection nobody awaits is not a crash: the caller may have moved on to another session.
      ready.catch(() => undefined);
      const emit = (event: FeedEvent) => listener(event);
      const stream = followEventStream({
        url: `${base}${session(sessionId)}/events`,
        headers: auth,
        onMessage: (message) => {
          let data: unknown;
          try {
            data = JSON.parse(message.data);
          } catch {
            return;
          }
          if (message.event === 'message') return emit({ kind: 'update', envelope: data as UpdateEnvelope });
          if (message.event !== 'snapshot' && message.event !== 'snapshot_required') return;
          emit({ kind: 'snapshot', snapshot: data as SessionSnapshot, resumed: message.event === 'snapshot_required' });
          if (!connected) {
            connected = true;
            markReady();
          }
        },
        onLost: (error) => {
          if (!connected) refuse(error);
          emit({ kind: 'connection_lost', error });
        },
        onRestored: () => emit({ kind: 'connection_restored' }),
        onRefused: (error) => {
          refuse(error);
          emit({ kind: 'ended', error });
        },
      });
      const feed: Feed = {
        ready,
        close: () => {
          stream.close();
          feeds.delete(feed);
        },
      };
      feeds.add(feed);
      return feed;
    },

    async close() {
      closing.abort();
      for (const feed of [...feeds]) feed.close();
    },
  };
}
