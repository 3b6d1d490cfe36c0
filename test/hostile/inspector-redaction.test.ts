import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { z } from 'zod';
import { defineTool } from '../../src/index.js';
import { sqliteFile, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../support/host.js';
import { until } from '../support/poll.js';
import { SseClient } from '../support/sse-client.js';

/**
 * Issue 22, finding 7: the inspector served `state.context.loop.signature` and
 * `event.output.loop.signature` — the loop detector's `name:{arguments}` — with an `apiKey` in
 * clear, and never redacted `pwd`, `dsn`, … nor a URL's password. Reproduced as the probe did it:
 * a model calls a tool twice with credentials in its arguments (so the loop detector's signature
 * holds them) and the tool prints them back as configuration; then nothing the inspector serves —
 * the session stream live and replayed, the session list, the forward to Stately's inspector —
 * holds any of them, while the counts beside them stay visible.
 */

const API_KEY = 'sk-live-4f9a2c7e1b83d05a';
const DB_PASSWORD = 's3cr3t-db-pass';
const PWD = 'hunter2-pwd-9911';
const TOKENS = 'ghp_tokensvalue0042';
const ARGS = { apiKey: API_KEY, dsn: `postgres://app:${DB_PASSWORD}@db.internal:5432/main`, pwd: PWD, tokens: TOKENS, api_keys: [API_KEY], note: 'reconnect' };
const SECRETS = [API_KEY, DB_PASSWORD, PWD, TOKENS];

const connectDb = defineTool({
  name: 'connect_db',
  description: 'Connects to a database',
  effect: 'read',
  input: z.object({ apiKey: z.string(), dsn: z.string(), pwd: z.string(), tokens: z.string(), api_keys: z.array(z.string()), note: z.string() }),
  // A tool that echoes its configuration, as real ones do: DSN=…, a header line, a JSON dump.
  execute: async (args) => ({
    status: 'succeeded',
    content: `connected\nDSN=${args.dsn}\nAuthorization: Bearer ${args.apiKey}\nconfig: ${JSON.stringify({ pwd: args.pwd, tokens: args.tokens })}`,
  }),
});

const usage = { inputTokens: 1_234, outputTokens: 56, cachedInputTokens: 789 };
const steps = [
  { text: 'connecting', toolCalls: [{ id: 'c1', name: 'connect_db', args: ARGS }], usage },
  { text: 'once more', toolCalls: [{ id: 'c2', name: 'connect_db', args: ARGS }], usage },
  { text: 'connected twice', usage },
];

let host: TestHost | undefined;
let db: DurableDatabase | undefined;
const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await host?.close();
  await db?.drop();
  [host, db] = [undefined, undefined];
});

/** A WebSocket server standing in for Stately's relay: every message the host forwards, as text. */
async function relay(): Promise<{ url: string; received: string[] }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const received: string[] = [];
  server.on('connection', (socket) => socket.on('message', (data) => received.push(String(data))));
  closers.push(() => {
    for (const client of server.clients) client.terminate();
    return new Promise((resolve) => server.close(resolve));
  });
  return { url: `ws://127.0.0.1:${(server.address() as { port: number }).port}`, received };
}

async function stream(route: string): Promise<SseClient> {
  const client = await SseClient.connect(host!.url + route);
  closers.push(() => client.close());
  return client;
}

/** Every string at any depth of a value, with the path to it. */
function strings(value: unknown, path = ''): [string, string][] {
  if (typeof value === 'string') return [[path, value]];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => strings(inner, `${path}.${key}`));
}

describe('the inspector redacts the credentials the probe found (finding 7)', () => {
  it('serves no credential from tool arguments, the loop signature or tool output, and keeps the counts', async () => {
    const stately = await relay();
    db = sqliteFile();
    host = await testHost(db, steps, { runtime: { tools: [connectDb] }, statelyInspect: stately.url });
    const sessionId = await newSession(host, { permissionMode: 'auto' });

    const list = await stream('/inspect/api/sessions');
    const live = await stream(`/inspect/api/sessions/${sessionId}/stream`);
    await live.next((e) => e.event === 'hello');
    const turn = await postTurn(host, sessionId, 'probe-7');
    expect(turn.status).toBe(202);
    expect(await finished(host, sessionId, turn.body.turnId as string)).toMatchObject({ status: 'completed' });
    await live.next((e) => e.data.includes('"turn_finished"'));
    // A page that arrives afterwards gets the present and the buffered history.
    const replayed = await stream(`/inspect/api/sessions/${sessionId}/stream`);
    await replayed.next((e) => e.data.includes('"turn_finished"'));
    await list.next((e) => e.data.includes('"lastOutcome":"completed"'));
    await until('the Stately forward has sent the turn', () => stately.received.some((m) => m.includes('connected twice')));

    const served = [...live.events, ...replayed.events, ...list.events].map((e) => e.data).concat(stately.received);
    // None of the credentials, anywhere.
    const everything = served.join('\n');
    for (const secret of SECRETS) expect(everything, secret).not.toContain(secret);

    const found = served.flatMap((text) => strings(JSON.parse(text) as unknown));

    // The probe's places are served: the loop detector's signature in the turn's context and in the
    // tool call's output (a hash of the call, or the call itself, redacted), the arguments as text
    // and parsed, the tool's output.
    const signatures = found.filter(([path]) => path.endsWith('.loop.signature'));
    expect(signatures.some(([path]) => path.includes('.context.loop.signature'))).toBe(true);
    expect(signatures.some(([path]) => path.includes('.output.loop.signature'))).toBe(true);
    for (const [, signature] of signatures.filter(([, s]) => s.startsWith('connect_db:'))) expect(signature).toContain('"apiKey":"[redacted]"');
    expect(found.some(([path, text]) => path.endsWith('.argumentsText') && text.includes('"dsn":"[redacted]"') && text.includes('"note":"reconnect"'))).toBe(true);
    expect(found.some(([path, text]) => path.endsWith('.args.pwd') && text === '[redacted]')).toBe(true);
    expect(found.some(([, text]) => text.includes('DSN=[redacted]') && text.includes('Authorization: [redacted]'))).toBe(true);

    // Counts that merely mention tokens or keys still show (three model calls' usage), as does the loop's count.
    expect(everything).toContain('"inputTokens":3702');
    expect(everything).toContain('"outputTokens":168');
    expect(everything).toContain('"cachedInputTokens":2367');
    expect(everything).toContain('"doomLoopThreshold":3');
    expect(served.some((text) => /"loop":\{"signature":"[^"]+","count":2,/.test(text) || /"loop":\{"signature":"connect_db:.*?"count":2,/.test(text))).toBe(true);
  });
});
