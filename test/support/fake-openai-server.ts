import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The provider's side of an OpenAI-compatible `/v1/chat/completions`, on loopback, for tests: it
 * answers each request with the next scripted reply — a stream of SSE chunks (optionally left hanging
 * mid-way), or an HTTP error — and records every request it received, body and headers.
 */
export type FakeReply =
  | {
      chunks: object[];
      /** Send the chunks, then neither `[DONE]` nor an end: a stalled stream. */
      stall?: boolean;
      /** Hold the reply until this settles: a test decides when the model answers. */
      until?: Promise<unknown>;
    }
  | { status: number; body: unknown; headers?: Record<string, string> };

export interface ReceivedRequest {
  body: ChatRequestBody;
  headers: IncomingHttpHeaders;
}

/** The parts of a chat completions request the tests read. */
export interface ChatRequestBody {
  model: string;
  stream: boolean;
  messages: { role: string; content?: unknown; reasoning_content?: string; tool_calls?: WireToolCall[]; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string } }[];
  [key: string]: unknown;
}

export interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  extra_content?: unknown;
}

export interface FakeOpenAiServer {
  /** `http://127.0.0.1:PORT/v1`, the base URL a client is given. */
  baseUrl: string;
  readonly requests: ReceivedRequest[];
  /** Scripts more replies, answered in order after those already queued. */
  reply(...replies: FakeReply[]): void;
  close(): Promise<void>;
}

export async function startFakeOpenAiServer(replies: FakeReply[] = []): Promise<FakeOpenAiServer> {
  const queue = [...replies];
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return json(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
      requests.push({ body: JSON.parse(text) as ChatRequestBody, headers: req.headers });
      const next = queue.shift();
      if (!next) return json(res, 500, { error: { message: 'the fake server has no reply scripted for this request' } });
      if ('status' in next) return json(res, next.status, next.body, next.headers);
      void Promise.resolve(next.until).then(() => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
        for (const chunk of next.chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        if (!next.stall) res.end('data: [DONE]\n\n');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    reply: (...more) => queue.push(...more),
    close: () =>
      new Promise<void>((resolve) => {
        // A stalled stream keeps its connection open: end those too.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** Usage as OpenAI reports it in the stream's last chunk (`stream_options.include_usage`). */
export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
}

export interface WireCall {
  id: string;
  name: string;
  /** The arguments text, sent in `pieces` chunks after the one naming the call. */
  arguments: string;
  pieces?: number;
  extraContent?: unknown;
}

/** Builders for the chunks a real OpenAI-compatible server streams. */
export const sse = {
  /** A whole answer: optional reasoning, text in word deltas, tool calls split across chunks, finish, usage. */
  reply(options: { reasoning?: string; text?: string; calls?: WireCall[]; usage?: WireUsage; finishReason?: string }): object[] {
    const chunks = [delta({ role: 'assistant', content: '' })];
    if (options.reasoning) chunks.push(...words(options.reasoning).map((w) => delta({ reasoning_content: w })));
    if (options.text) chunks.push(...words(options.text).map((w) => delta({ content: w })));
    (options.calls ?? []).forEach((call, index) => chunks.push(...toolCallChunks(index, call)));
    chunks.push(finish(options.finishReason ?? (options.calls?.length ? 'tool_calls' : 'stop')));
    if (options.usage) chunks.push(usageChunk(options.usage));
    return chunks;
  },
  delta,
};

function delta(fields: object): object {
  return { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'fake-model', choices: [{ index: 0, delta: fields, finish_reason: null }] };
}

function finish(reason: string): object {
  return { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'fake-model', choices: [{ index: 0, delta: {}, finish_reason: reason }] };
}

function usageChunk(usage: WireUsage): object {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'fake-model',
    choices: [],
    usage: {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
      prompt_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
      completion_tokens_details: { reasoning_tokens: usage.reasoning_tokens ?? 0 },
    },
  };
}

/** The first chunk names the call (id, name, no arguments yet); the arguments follow in pieces, by index only. */
function toolCallChunks(index: number, call: WireCall): object[] {
  const first = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' }, ...(call.extraContent !== undefined && { extra_content: call.extraContent }) };
  const pieces = call.pieces ?? 3;
  const size = Math.ceil(call.arguments.length / pieces);
  const rest = Array.from({ length: pieces }, (_, i) => call.arguments.slice(i * size, (i + 1) * size)).filter((piece) => piece !== '');
  return [delta({ tool_calls: [first] }), ...rest.map((piece) => delta({ tool_calls: [{ index, function: { arguments: piece } }] }))];
}

function words(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}
