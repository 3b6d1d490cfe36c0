/**
 * The host's API with the page's token. The token comes from `?token=` once (then it is kept in
 * sessionStorage and taken out of the address bar) and goes out as `Authorization: Bearer` on
 * every request, streams included — which is why streams are read with fetch, not EventSource.
 */
const KEY = 'turnchart.token';

export function takeTokenFromUrl(): void {
  const url = new URL(location.href);
  const token = url.searchParams.get('token');
  if (token === null) return;
  sessionStorage.setItem(KEY, token);
  url.searchParams.delete('token');
  history.replaceState(null, '', url);
}

export function setToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const token = sessionStorage.getItem(KEY);
  return token ? { ...extra, authorization: `Bearer ${token}` } : extra;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text === '' ? {} : (JSON.parse(text) as unknown);
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } }).error;
    throw new ApiError(response.status, error?.code ?? 'Error', error?.message ?? response.statusText);
  }
  return parsed as T;
}

interface SseMessage {
  event: string;
  id: string | null;
  data: string;
}

export interface StreamHandlers {
  message(message: SseMessage): void;
  /** Connected (true) or lost (false); it reconnects by itself. */
  status(connected: boolean, error?: ApiError): void;
}

/**
 * A Server-Sent Events stream over fetch, reconnecting after a drop with `Last-Event-ID` as an
 * EventSource would. A 401 stops it (the page asks for a token); `close()` ends it; `restart()`
 * opens it again at once without a resume point, so the server sends everything again.
 */
export function openStream(path: string, handlers: StreamHandlers): { close(): void; restart(): void } {
  let closed = false;
  let restarting = false;
  let lastId: string | null = null;
  let controller = new AbortController();
  const run = async (): Promise<void> => {
    while (!closed) {
      controller = new AbortController();
      try {
        const response = await fetch(path, { headers: headers(lastId ? { 'last-event-id': lastId } : {}), signal: controller.signal });
        if (!response.ok || !response.body) {
          const body = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
          const error = new ApiError(response.status, body.error?.code ?? 'Error', body.error?.message ?? response.statusText);
          handlers.status(false, error);
          if (response.status === 401 || response.status === 404 || response.status === 400) return;
        } else {
          handlers.status(true);
          const { signal } = controller;
          await read(response.body, (message) => {
            // Restarted by a message just handled: the rest of this connection's messages are not wanted.
            if (signal.aborted) return;
            if (message.id !== null) lastId = message.id;
            handlers.message(message);
          });
          handlers.status(false);
        }
      } catch {
        if (closed) return;
        if (!restarting) handlers.status(false);
      }
      if (restarting) restarting = false;
      else await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  };
  void run();
  return {
    close() {
      closed = true;
      controller.abort();
    },
    restart() {
      lastId = null;
      restarting = true;
      controller.abort();
    },
  };
}

async function read(body: ReadableStream<Uint8Array>, deliver: (message: SseMessage) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const message: SseMessage = { event: 'message', id: null, data: '' };
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':') || line === '') continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') message.event = value;
        else if (field === 'id') message.id = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length === 0) continue;
      message.data = data.join('\n');
      deliver(message);
    }
  }
}
