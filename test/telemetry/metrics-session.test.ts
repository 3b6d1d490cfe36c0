import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, StorageFaultError, type ModelPort } from '../../src/index.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, gatedStep, newSession, postTurn, testHost, type TestHost } from '../support/host.js';
import { until } from '../support/poll.js';
import { parsePrometheusText, samplesOf, valueOf, type Exposition } from '../support/prometheus-text.js';
import { SseClient } from '../support/sse-client.js';

const tools = [
  defineTool({
    name: 'lookup',
    description: 'Look a key up',
    effect: 'read',
    input: z.object({ key: z.string() }),
    execute: async (args) => ({ status: 'succeeded', content: `value of ${args.key}` }),
  }),
  defineTool({
    name: 'save',
    description: 'Save a file',
    effect: 'write',
    input: z.object({ path: z.string() }),
    authorize: (args) => ({ decision: 'ask', paths: [args.path] }),
    execute: async (args) => ({ status: 'succeeded', content: `saved ${args.path}` }),
  }),
];

/** What each scripted model call reports it cost. */
const USAGE = [
  { inputTokens: 100, outputTokens: 10, cachedInputTokens: 40, reasoningTokens: 3 },
  { inputTokens: 130, outputTokens: 12, cachedInputTokens: 90, reasoningTokens: 0 },
  { inputTokens: 150, outputTokens: 7, cachedInputTokens: 0, reasoningTokens: 1 },
];

async function scrape(host: TestHost, headers: Record<string, string> = {}): Promise<{ status: number; contentType: string | null; text: string }> {
  const response = await fetch(`${host.url}/metrics`, { headers });
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() };
}

async function metricsOf(host: TestHost): Promise<Exposition> {
  const { status, text } = await scrape(host);
  expect(status).toBe(200);
  return parsePrometheusText(text);
}

/** Polls the session's snapshot until an approval is pending; its tool call id. */
async function pendingApproval(host: TestHost, sessionId: string): Promise<string> {
  let id: string | null = null;
  await until('an approval to be pending', async () => {
    const { body } = await host.call('GET', `/sessions/${sessionId}`);
    id = (body.runtime as { pendingApproval?: { toolCallId: string } | null }).pendingApproval?.toolCallId ?? null;
    return id !== null;
  });
  return id!;
}

/** A model that streams `deltas`, each after the first only once `sent(i)` resolves (the reader has it). */
function pacedModel(deltas: string[], sent: (count: number) => Promise<unknown>): ModelPort {
  return {
    capabilities: { contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 },
    async *stream() {
      for (const [i, text] of deltas.entries()) {
        if (i > 0) await sent(i);
        yield { type: 'text_delta' as const, text };
      }
      yield { type: 'response_completed' as const, response: { text: 'done', reasoning: '', toolCalls: [] } };
    },
  };
}

/** An HTTP client that sends the request, reads the first bytes and then stops reading: its socket's window fills up. */
async function stalledClient(base: string, route: string): Promise<{ closed: Promise<void>; resume: () => void }> {
  const url = new URL(base);
  const socket = net.connect({ host: url.hostname, port: Number(url.port) });
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.once('data', () => socket.pause());
  socket.write(`GET ${route} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`);
  return { closed, resume: () => socket.resume() };
}

describe.each(durableTargets)('GET /metrics after a scripted session on $name (issue 27)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });

  it.skipIf(skip)('counts the turns, model calls, tool calls and tokens run, by bounded labels only', async () => {
    db = create();
    const cancelled = gatedStep({ text: 'never said' });
    host = await testHost(
      db,
      [
        { text: 'looking', toolCalls: [{ id: 'c1', name: 'lookup', args: { key: 'a' } }, { id: 'c2', name: 'lookup', args: { key: 'b' } }], usage: USAGE[0] },
        { text: 'found both', usage: USAGE[1] },
        { text: 'saving', toolCalls: [{ id: 'c3', name: 'save', args: { path: 'notes.md' } }], usage: USAGE[2] },
        cancelled.step,
      ],
      { runtime: { tools } },
    );
    const sessionId = await newSession(host, { permissionMode: 'ask' });
    const turnIds: string[] = [];

    // Turn 1: two tool calls, then an answer.
    const first = await postTurn(host, sessionId, 'r1', 'look a and b up');
    turnIds.push(first.body.turnId as string);
    expect(await finished(host, sessionId, turnIds[0]!)).toMatchObject({ status: 'completed' });

    // Turn 2: a write asked for approval, denied: the call is denied and the turn fails.
    const second = await postTurn(host, sessionId, 'r2', 'save it');
    turnIds.push(second.body.turnId as string);
    expect(await pendingApproval(host, sessionId)).toBe('c3');
    expect((await host.call('POST', `/sessions/${sessionId}/turns/${turnIds[1]!}/permissions/c3`, { decision: 'deny' })).status).toBe(200);
    expect(await finished(host, sessionId, turnIds[1]!)).toMatchObject({ status: 'failed' });

    // Turn 3: cancelled while its model call runs.
    const third = await postTurn(host, sessionId, 'r3', 'wait');
    turnIds.push(third.body.turnId as string);
    await cancelled.reached;
    expect((await host.call('POST', `/sessions/${sessionId}/turns/${turnIds[2]!}/cancel`)).status).toBe(200);
    expect(await finished(host, sessionId, turnIds[2]!)).toMatchObject({ status: 'cancelled' });

    const { status, contentType, text } = await scrape(host);
    expect(status).toBe(200);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const m = parsePrometheusText(text);

    // Turns by agent and final status: the stored turns' own statuses.
    const stored = await Promise.all(turnIds.map((id) => host!.storage.getTurn(id)));
    const byStatus: Record<string, number> = {};
    for (const turn of stored) byStatus[turn!.status] = (byStatus[turn!.status] ?? 0) + 1;
    expect(byStatus).toEqual({ completed: 1, failed: 1, cancelled: 1 });
    const turns = samplesOf(m, 'turnchart_turns_total');
    expect(Object.fromEntries(turns.map((s) => [s.labels.status, s.value]))).toEqual(byStatus);
    expect(new Set(turns.map((s) => s.labels.agent))).toEqual(new Set(['default']));
    expect(m.types.get('turnchart_turns_total')).toBe('counter');
    expect(valueOf(m, 'turnchart_turn_duration_seconds_count')).toBe(3);
    expect(valueOf(m, 'turnchart_turn_duration_seconds_count', { status: 'cancelled' })).toBe(1);
    expect(m.types.get('turnchart_turn_duration_seconds')).toBe('histogram');

    // Model calls: three answered, one cancelled; a first token for each that streamed text.
    expect(valueOf(m, 'turnchart_model_call_duration_seconds_count', { model: 'scripted', status: 'succeeded' })).toBe(3);
    expect(valueOf(m, 'turnchart_model_call_duration_seconds_count', { model: 'scripted', status: 'cancelled' })).toBe(1);
    expect(valueOf(m, 'turnchart_model_call_duration_seconds_count')).toBe(4);
    expect(valueOf(m, 'turnchart_model_call_duration_seconds_bucket', { le: '+Inf' })).toBe(4);
    expect(valueOf(m, 'turnchart_model_time_to_first_token_seconds_count', { model: 'scripted' })).toBe(3);

    // Tokens by model and type: the scripted usage, summed.
    const sum = (key: keyof (typeof USAGE)[number]) => USAGE.reduce((total, u) => total + u[key], 0);
    expect(valueOf(m, 'turnchart_model_tokens_total', { model: 'scripted', type: 'input' })).toBe(sum('inputTokens'));
    expect(valueOf(m, 'turnchart_model_tokens_total', { model: 'scripted', type: 'output' })).toBe(sum('outputTokens'));
    expect(valueOf(m, 'turnchart_model_tokens_total', { model: 'scripted', type: 'cached_input' })).toBe(sum('cachedInputTokens'));
    expect(valueOf(m, 'turnchart_model_tokens_total', { model: 'scripted', type: 'reasoning' })).toBe(sum('reasoningTokens'));

    // Tool calls by tool and status, their durations, and the one wait for a person.
    const toolCalls = samplesOf(m, 'turnchart_tool_calls_total').map((s) => [s.labels.tool, s.labels.status, s.value]);
    expect(toolCalls.sort()).toEqual([
      ['lookup', 'succeeded', 2],
      ['save', 'denied', 1],
    ]);
    expect(valueOf(m, 'turnchart_tool_call_duration_seconds_count', { tool: 'lookup', status: 'succeeded' })).toBe(2);
    expect(valueOf(m, 'turnchart_tool_call_duration_seconds_count', { tool: 'save', status: 'denied' })).toBe(1);
    expect(valueOf(m, 'turnchart_permission_wait_seconds_count', { decision: 'denied_by_user' })).toBe(1);
    expect(valueOf(m, 'turnchart_permission_wait_seconds_count')).toBe(1);

    // Levels: the one open session, nothing running or queued, no streams.
    expect(valueOf(m, 'turnchart_open_sessions')).toBe(1);
    expect(valueOf(m, 'turnchart_running_turns')).toBe(0);
    expect(valueOf(m, 'turnchart_queued_turns')).toBe(0);
    expect(valueOf(m, 'turnchart_sse_clients')).toBe(0);
    expect(valueOf(m, 'turnchart_storage_errors_total')).toBe(0);

    // Node's process metrics, in the same scrape.
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      expect(samplesOf(m, name).length, name).toBeGreaterThan(0);
    }

    // No label value names a session, a turn or a call, nor holds what the user wrote.
    const ids = [sessionId, ...turnIds, 'c1', 'c2', 'c3'];
    const words = ['look a and b up', 'save it', 'notes.md', 'found both'];
    for (const sample of m.samples) {
      for (const value of Object.values(sample.labels)) {
        for (const id of ids) expect(value, `${sample.name} ${JSON.stringify(sample.labels)}`).not.toContain(id);
        for (const word of words) expect(value).not.toContain(word);
        expect(value).not.toMatch(/^(sess|turn|call|run|task)_/);
      }
    }
  });

  it.skipIf(skip)('counts open event streams while they are open, and storage failures by operation', async () => {
    db = create();
    host = await testHost(db, [{ text: 'hi' }]);
    const sessionId = await newSession(host);

    const stream = await SseClient.connect(`${host.url}/sessions/${sessionId}/events`);
    expect(stream.status).toBe(200);
    await stream.next((event) => event.event === 'snapshot');
    expect(valueOf(await metricsOf(host), 'turnchart_sse_clients')).toBe(1);
    stream.close();
    await stream.ended;
    // The server learns of the client's going when the socket closes: no signal reaches the test for it.
    await until('the stream to be released', async () => valueOf(await metricsOf(host!), 'turnchart_sse_clients') === 0);

    host.storage.failNext('listMessages', 1, new StorageFaultError('listMessages'));
    expect((await host.call('GET', `/sessions/${sessionId}/messages`)).status).toBe(503);
    const m = await metricsOf(host);
    expect(valueOf(m, 'turnchart_storage_errors_total', { operation: 'listMessages' })).toBe(1);
    expect(valueOf(m, 'turnchart_storage_errors_total')).toBe(1);
  });

  it.skipIf(skip)('counts a stream client cut off for falling too far behind', async () => {
    db = create();
    const big = 'x'.repeat(64 * 1024);
    const clientsOf: { reader?: SseClient } = {};
    const readerHas = (deltas: number) => clientsOf.reader!.nextUpdate('text_delta', 0, deltas);
    host = await testHost(db, pacedModel(Array.from({ length: 400 }, () => big), readerHas), { sse: { bufferBytes: 1024 * 1024 } });
    const sessionId = await newSession(host);
    const stalled = await stalledClient(host.url, `/sessions/${sessionId}/events`);
    const reader = await SseClient.connect(`${host.url}/sessions/${sessionId}/events`);
    clientsOf.reader = reader;
    const turn = await postTurn(host, sessionId, 'r1');
    expect(await finished(host, sessionId, turn.body.turnId as string)).toMatchObject({ status: 'completed' });
    await reader.nextUpdate('turn_finished');
    stalled.resume();
    await stalled.closed;
    expect(valueOf(await metricsOf(host), 'turnchart_sse_clients_dropped_total')).toBe(1);
    // The reader kept up: it is still open, and the only one counted once the cut stream's slot is given back.
    await until('the cut stream to be released', async () => valueOf(await metricsOf(host!), 'turnchart_sse_clients') === 1);
    reader.close();
  });
});
