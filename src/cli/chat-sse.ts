import { setTimeout as delay } from 'node:timers/promises';
import { ChatError } from './chat-client.js';
import { messageOf } from '../protocol/error-message.js';

/** One Server-Sent Event: its name (`message` when unnamed), its id, its data lines joined. */
interface SseMessage {
  event: string;
  id: string | null;
  data: string;
}

export interface EventStreamOptions {
  url: string;
  headers?: Record<string, string>;
  onMessage(message: SseMessage): void;
  /** The connection failed or ended; called once per outage, before the retries. */
  onLost(error: ChatError): void;
  /** Connected again after an outage. */
  onRestored(): void;
  /** The host refused the stream (400, 401, 403, 404): no retry. */
  onRefused(error: ChatError): void;
  /** The longest wait between two attempts (the host's `retry:` is the first one). Default 5 s. */
  maxDelayMs?: number;
}

/** Statuses that retrying cannot change. */
const REFUSALS = new Set([400, 401, 403, 404]);

/**
 * Follows an event stream the way a browser's EventSource does, over `fetch`: it reconnects after a
 * dropped connection or an ended stream — waiting the host's `retry:` time, doubling up to a limit —
 * and resumes with `Last-Event-ID`, the id of the last event received.
 */
export function followEventStream(options: EventStreamOptions): { close(): void } {
  const controller = new AbortController();
  const { signal } = controller;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  let lastId: string | null = null;
  let retryMs = 1_000;
  let outage = false;
  let failures = 0;

  const connect = async (): Promise<ChatError | 'refused'> => {
    let response: Response;
    try {
      response = await fetch(options.url, {
        headers: { accept: 'text/event-stream', ...options.headers, ...(lastId !== null && { 'last-event-id': lastId }) },
        signal,
      });
    } catch (error) {
      return unreachable(options.url, error);
    }
    if (!response.ok) {
      const error = await errorOf(response);
      if (!REFUSALS.has(response.status)) return error;
      options.onRefused(error);
      return 'refused';
    }
    return read(response);
  };

  const read = async (response: Response): Promise<ChatError> => {
    if (outage) {
      outage = false;
      options.onRestored();
    }
    failures = 0;
    try {
      await parseEvents(response.body!, (message) => {
        if (message.id !== null) lastId = message.id;
        options.onMessage(message);
      }, (ms) => (retryMs = ms));
      return new ChatError('ConnectionLost', 'the host ended the event stream');
    } catch (error) {
      return new ChatError('ConnectionLost', `the event stream broke: ${messageOf(error)}`);
    }
  };

  const run = async (): Promise<void> => {
    while (!signal.aborted) {
      const result = await connect();
      if (result === 'refused' || signal.aborted) return;
      if (!outage) {
        outage = true;
        options.onLost(result);
      }
      failures += 1;
      try {
        await delay(Math.min(maxDelayMs, retryMs * 2 ** (failures - 1)), undefined, { signal });
      } catch {
        return;
      }
    }
  };
  void run();
  return { close: () => controller.abort() };
}

/** Reads a text/event-stream body, calling `onMessage` for each event with data (comments ignored). */
async function parseEvents(body: ReadableStream<Uint8Array>, onMessage: (message: SseMessage) => void, onRetry: (ms: number) => void = () => undefined): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      let id: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (name === 'event') event = value;
        else if (name === 'id') id = value;
        else if (name === 'data') data.push(value);
        else if (name === 'retry' && /^\d+$/.test(value)) onRetry(Number(value));
      }
      if (data.length > 0) onMessage({ event, id, data: data.join('\n') });
    }
  }
}

/** The `{ error: { code, message } }` body of a refused request, or a code made from its status. */
export async function errorOf(response: Response): Promise<ChatError> {
  const text = await response.text().catch(() => '');
  try {
    const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code === 'string') return new ChatError(error.code, typeof error.message === 'string' ? error.message : error.code);
  } catch {
    // not JSON: a proxy or something else answered
  }
  return new ChatError(`Http${response.status}`, `${response.status} ${response.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`);
}

/** A request that never got an answer: the host is down, unreachable or went away mid-request. */
export function unreachable(url: string, error: unknown): ChatError {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const detail = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : messageOf(error);
  if ((error as { name?: unknown } | null)?.name === 'TimeoutError') return new ChatError('HostTimeout', `${new URL(url).origin} did not answer in time`);
  return new ChatError('HostUnreachable', `cannot reach ${new URL(url).origin} (${detail})`);
}
