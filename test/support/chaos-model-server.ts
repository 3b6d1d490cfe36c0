import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sse, type ChatRequestBody } from './fake-openai-server.js';

/**
 * An OpenAI-compatible `/v1/chat/completions` for the turn chaos runs whose replies are decided by
 * the conversation alone, so any host of the cluster — the owner that started a turn, or the one
 * that resumed it after a kill — gets the same answer for the same conversation.
 *
 * A turn's prompt is `chaos <tag> steps=<N> approve=<K>`: the model asks for step 1 … N, one tool
 * call a reply — step K (0: none) with `ledger_approved`, which needs an approval under `ask`, every
 * other with `ledger_write` — and answers `done <tag>` once every step has a successful result
 * (`ok step n`). A step whose call came back any other way (interrupted by a crash, failed) is asked
 * for again under a new call. Each reply is streamed in a few chunks spaced out in time, so a kill
 * can land while the model streams.
 */
export interface ChaosModelServer {
  /** `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** Model calls answered (streams begun). */
  readonly calls: () => number;
  close(): Promise<void>;
}

export const CHAOS_PROMPT = /chaos (\S+) steps=(\d+) approve=(\d+)/;
export const STEP_RESULT = /^ok step (\d+)$/;

export function chaosPrompt(tag: string, steps: number, approveAt: number): string {
  return `chaos ${tag} steps=${steps} approve=${approveAt}`;
}

export async function startChaosModelServer(options: {
  random: () => number;
  /** Pause between two streamed chunks, drawn in [min, max] ms. */
  chunkGapMs: [number, number];
  /** How long a step's tool holds after its side effect, drawn in [min, max] ms: the window a kill inside a tool needs. */
  toolHoldMs: [number, number];
}): Promise<ChaosModelServer> {
  let calls = 0;
  let nextCallId = 0;
  const between = ([min, max]: [number, number]) => Math.round(min + options.random() * (max - min));
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return json(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
      const decided = decide(JSON.parse(text) as ChatRequestBody);
      if (!decided) return json(res, 400, { error: { message: 'no chaos prompt in the conversation' } });
      calls += 1;
      const reply =
        decided.kind === 'answer'
          ? sse.reply({ text: `done ${decided.tag}`, usage: { prompt_tokens: 100, completion_tokens: 5 } })
          : sse.reply({
              text: `step ${decided.step} of ${decided.tag}`,
              calls: [{ id: `call_${++nextCallId}`, name: decided.tool, arguments: JSON.stringify({ tag: decided.tag, step: decided.step, holdMs: between(options.toolHoldMs) }) }],
              usage: { prompt_tokens: 100, completion_tokens: 10 },
            });
      void stream(res, reply, () => between(options.chunkGapMs));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    calls: () => calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Decision = { kind: 'answer'; tag: string } | { kind: 'call'; tag: string; step: number; tool: 'ledger_write' | 'ledger_approved' };

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: { text?: unknown }) => (typeof part.text === 'string' ? part.text : '')).join('\n');
  return '';
}

function decide(body: ChatRequestBody): Decision | null {
  const at = body.messages.findLastIndex((m) => m.role === 'user' && CHAOS_PROMPT.test(textOf(m.content)));
  if (at < 0) return null;
  const [, tag, steps, approve] = CHAOS_PROMPT.exec(textOf(body.messages[at]!.content))!;
  const done = new Set<number>();
  for (const m of body.messages.slice(at + 1)) {
    const match = m.role === 'tool' ? STEP_RESULT.exec(textOf(m.content).trim()) : null;
    if (match) done.add(Number(match[1]));
  }
  const next = Array.from({ length: Number(steps) }, (_, i) => i + 1).find((n) => !done.has(n));
  if (next === undefined) return { kind: 'answer', tag: tag! };
  return { kind: 'call', tag: tag!, step: next, tool: next === Number(approve) ? 'ledger_approved' : 'ledger_write' };
}

/** The chunks in three bursts with pauses between; a host that died meanwhile (the socket closed) ends it. */
async function stream(res: ServerResponse, chunks: object[], gap: () => number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const third = Math.ceil(chunks.length / 3);
  for (let i = 0; i < chunks.length; i += third) {
    if (res.destroyed) return;
    for (const chunk of chunks.slice(i, i + third)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    // The provider's pacing, not a test's wait: it leaves the host mid-stream for a while.
    await new Promise((resolve) => setTimeout(resolve, gap()));
  }
  if (!res.destroyed) res.end('data: [DONE]\n\n');
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
