import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { context, propagation, ProxyTracerProvider, trace } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { z } from 'zod';
import { createRuntime, defineTool, otelSpans, OtelSpans, scriptedModel, sqliteStorage, type ModelPort, type SpanFacts, type SessionStorage } from '../../src/index.js';
import { runTurn } from '../support/harness.js';
import { OTLP_KIND, OTLP_STATUS, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';

/**
 * Issue 27: a turn's spans reach an OTLP/HTTP receiver through OpenTelemetry's real Node SDK and
 * JSON exporter, in process as an embedder runs them: the GenAI conventions' tree and attributes,
 * content absent by default, present and redacted when asked for.
 */

let receiver: OtlpReceiver;
let sdk: NodeSDK;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  sdk = new NodeSDK({
    serviceName: 'turnchart-otel-test',
    traceExporter: new OTLPTraceExporter({ url: `${receiver.url}/v1/traces` }),
    metricReaders: [],
    logRecordProcessors: [],
    autoDetectResources: false,
  });
  sdk.start();
});

afterAll(async () => {
  await sdk.shutdown();
  // The test files of a worker share its modules (`isolate: false`): the next file finds the API as it was.
  trace.disable();
  context.disable();
  propagation.disable();
  await receiver.close();
});

/** Exports what the SDK's batch holds; resolves once the receiver has answered. */
async function flushSpans(): Promise<void> {
  const provider = trace.getTracerProvider() as ProxyTracerProvider;
  await (provider.getDelegate() as unknown as { forceFlush(): Promise<void> }).forceFlush();
}

const SECRET_KEY = 'sk-live-0123456789abcdef';
const SECRET_TOKEN = 'ghp_0123456789abcdefghij';

function lookupTool() {
  return defineTool({
    name: 'lookup',
    description: 'Looks the weather up',
    effect: 'read',
    input: z.object({ query: z.string(), apiKey: z.string() }),
    execute: async (args) => ({ status: 'succeeded', content: `${args.query}: sunny; token=${SECRET_TOKEN}` }),
  });
}

/** The scripted model, its responses saying why they stopped, as a provider's do. */
function withFinishReasons(model: ModelPort): ModelPort {
  return {
    capabilities: model.capabilities,
    ...(model.identity && { identity: model.identity }),
    async *stream(request, options) {
      for await (const event of model.stream(request, options)) {
        yield event.type === 'response_completed' ? { ...event, response: { ...event.response, finishReason: event.response.toolCalls.length > 0 ? 'tool_calls' : 'stop' } } : event;
      }
    },
  };
}

/** A turn of one tool step and an answer, on its own runtime, with the exporter attached as given. */
async function tracedTurn(recordContent: boolean) {
  const storage: SessionStorage = sqliteStorage({ filename: ':memory:' });
  const model = withFinishReasons(scriptedModel([
    { toolCalls: [{ name: 'lookup', args: { query: 'weather', apiKey: SECRET_KEY } }], usage: { inputTokens: 120, outputTokens: 30, cachedInputTokens: 100 } },
    { text: 'It is sunny.', usage: { inputTokens: 200, outputTokens: 10 } },
  ]));
  const runtime = await createRuntime({ model, tools: [lookupTool()], storage });
  const exporter = otelSpans(runtime, { recordContent });
  // A second observer, taking no content: what the call sites gave it.
  const seen: SpanFacts[] = [];
  runtime.observeSpans({ started: (span) => void seen.push(span.facts ?? {}), ended: (_id, end) => void seen.push(end.facts ?? {}) });
  try {
    const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
    const { turnId, outcome } = await runTurn(session, 'Log in with password: hunter2, then tell me the weather');
    expect(outcome.status).toBe('completed');
    await runtime.flushTrace();
    const stored = await storage.listSpans(session.id);
    await flushSpans();
    const spans = receiver.spans.filter((span) => span.attributes['turnchart.turn.id'] === turnId);
    return { sessionId: session.id, turnId, spans, stored, seen, exporter };
  } finally {
    exporter.stop();
    await runtime.shutdown();
  }
}

function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found, `one span named ${name}`).toHaveLength(1);
  return found[0]!;
}

const CONTENT_KEYS = ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result'];

describe('OpenTelemetry spans of a turn (GenAI conventions)', () => {
  it('exports invoke_agent → chat, execute_tool with the GenAI attributes, the stored spans one for one, and no content by default', async () => {
    const { sessionId, turnId, spans, stored, seen } = await tracedTurn(false);
    expect(spans).toHaveLength(4);

    const turn = one(spans, 'invoke_agent default');
    expect(turn.kind).toBe(OTLP_KIND.INTERNAL);
    expect(turn.scope).toBe('turnchart');
    expect(turn.resource['service.name']).toBe('turnchart-otel-test');
    expect(turn.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'default',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted',
      'gen_ai.conversation.id': sessionId,
      'turnchart.session.id': sessionId,
      'turnchart.turn.id': turnId,
      'turnchart.span.id': `turn:${turnId}`,
      'turnchart.trigger': 'message',
      'turnchart.status': 'succeeded',
      'gen_ai.usage.input_tokens': 320,
      'gen_ai.usage.output_tokens': 40,
    });
    expect(turn.attributes['turnchart.run.id']).toEqual(expect.stringMatching(/^run_/));
    expect(turn.statusCode).toBe(OTLP_STATUS.OK);

    const chats = spans.filter((span) => span.name === 'chat scripted').sort((a, b) => a.startMs - b.startMs);
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.kind).toBe(OTLP_KIND.CLIENT);
      expect(chat.traceId).toBe(turn.traceId);
      expect(chat.parentSpanId).toBe(turn.spanId);
      expect(chat.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'scripted', 'gen_ai.request.model': 'scripted', 'gen_ai.conversation.id': sessionId });
    }
    expect(chats[0]!.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.usage.cache_read.input_tokens': 100,
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'turnchart.span.id': `model:${turnId}:1`,
    });
    expect(chats[1]!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 200, 'gen_ai.usage.output_tokens': 10, 'gen_ai.response.finish_reasons': ['stop'] });

    const tool = one(spans, 'execute_tool lookup');
    expect(tool.kind).toBe(OTLP_KIND.INTERNAL);
    expect(tool.parentSpanId).toBe(turn.spanId);
    expect(tool.traceId).toBe(turn.traceId);
    const callId = tool.attributes['gen_ai.tool.call.id'];
    expect(callId).toEqual(expect.stringMatching(/^call_/));
    expect(tool.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'lookup', 'gen_ai.tool.type': 'function', 'turnchart.span.id': `tool:${turnId}:${String(callId)}` });
    expect(tool.attributes['turnchart.permission.decision']).toEqual(expect.any(String));
    // The tool ran between the two model calls, inside the turn.
    expect(tool.startMs).toBeGreaterThanOrEqual(chats[0]!.endMs);
    expect(chats[1]!.startMs).toBeGreaterThanOrEqual(tool.endMs);
    expect(turn.startMs).toBeLessThanOrEqual(chats[0]!.startMs);
    expect(turn.endMs).toBeGreaterThanOrEqual(chats[1]!.endMs);

    // One recorder: every stored span is exported under its own id, with its stored times.
    expect(stored.map((span) => span.id).sort()).toEqual(spans.map((span) => span.attributes['turnchart.span.id']).sort());
    for (const row of stored) {
      const exported = spans.find((span) => span.attributes['turnchart.span.id'] === row.id)!;
      expect([exported.startMs, exported.endMs]).toEqual([row.startedAtMs, row.endedAtMs]);
    }

    for (const span of spans) for (const key of CONTENT_KEYS) expect(span.attributes, `${span.name} without ${key}`).not.toHaveProperty(key);
    // Nothing was gathered for observers that take none.
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((facts) => facts.content !== undefined)).toEqual([]);
  });

  it('records the content with --otel-content: messages, system instructions, tool arguments and result, secrets redacted', async () => {
    const { spans, seen } = await tracedTurn(true);
    expect(seen.some((facts) => facts.content !== undefined)).toBe(true);
    const everything = JSON.stringify(spans.map((span) => span.attributes));
    for (const secret of ['hunter2', SECRET_KEY, SECRET_TOKEN]) expect(everything).not.toContain(secret);

    const [first, second] = spans.filter((span) => span.name === 'chat scripted').sort((a, b) => a.startMs - b.startMs);
    const input = JSON.parse(String(first!.attributes['gen_ai.input.messages'])) as { role: string; parts: { type: string; content?: string }[] }[];
    const user = input.find((message) => message.role === 'user' && message.parts[0]?.content?.startsWith('Log in'));
    expect(user?.parts).toEqual([{ type: 'text', content: 'Log in with password: [redacted]' }]);
    const system = JSON.parse(String(first!.attributes['gen_ai.system_instructions'])) as { type: string; content: string }[];
    expect(system.length).toBeGreaterThan(0);
    expect(system.every((part) => part.type === 'text')).toBe(true);
    const firstOutput = JSON.parse(String(first!.attributes['gen_ai.output.messages'])) as unknown;
    expect(firstOutput).toEqual([
      { role: 'assistant', parts: [{ type: 'tool_call', id: expect.stringMatching(/^call_/) as unknown, name: 'lookup', arguments: { query: 'weather', apiKey: '[redacted]' } }], finish_reason: 'tool_call' },
    ]);

    // The second call saw the tool's answer, redacted as the inspector redacts it.
    const secondInput = JSON.parse(String(second!.attributes['gen_ai.input.messages'])) as { role: string; parts: { type: string; result?: string }[] }[];
    const answer = secondInput.find((message) => message.role === 'tool')!.parts[0]!;
    expect(answer).toMatchObject({ type: 'tool_call_response', result: 'weather: sunny; token=[redacted]' });
    expect(JSON.parse(String(second!.attributes['gen_ai.output.messages']))).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'It is sunny.' }], finish_reason: 'stop' }]);

    const tool = one(spans, 'execute_tool lookup');
    expect(JSON.parse(String(tool.attributes['gen_ai.tool.call.arguments']))).toEqual({ query: 'weather', apiKey: '[redacted]' });
    expect(tool.attributes['gen_ai.tool.call.result']).toBe('weather: sunny; token=[redacted]');

    // The turn's own span holds no content: the conventions put it on the calls.
    for (const key of CONTENT_KEYS) expect(one(spans, 'invoke_agent default').attributes).not.toHaveProperty(key);
  });

  it("makes a turn whose start carries a traceparent a child of that remote span, and names an open turn's trace", async () => {
    const spans = new OtelSpans();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    const base = { sessionId: 'ses_otel', source: 'system' as const, status: 'running' as const, errorCode: null, endedAtMs: null };
    const t0 = Date.now();
    spans.started({ ...base, id: 'turn:turn_a', turnId: 'turn_a', kind: 'turn', name: 'turn', startedAtMs: t0, facts: { agent: 'default', traceParent: `00-${traceId}-${parentId}-01` } });
    spans.started({ ...base, id: 'model:turn_a:1', turnId: 'turn_a', kind: 'model_call', name: 'model call 1', source: 'model', startedAtMs: t0 + 1, facts: { requestModel: 'm' } });
    expect(spans.traceIdOf('turn_a')).toBe(traceId);
    expect(spans.traceParentOf('turn_a')).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    // A later version is read by its first fields; a malformed one starts a trace of its own.
    spans.started({ ...base, id: 'turn:turn_b', turnId: 'turn_b', kind: 'turn', name: 'turn', startedAtMs: t0, facts: { traceParent: `01-${traceId}-${parentId}-01-future` } });
    spans.started({ ...base, id: 'turn:turn_c', turnId: 'turn_c', kind: 'turn', name: 'turn', startedAtMs: t0, facts: { traceParent: `00-${'0'.repeat(32)}-${parentId}-01` } });
    spans.ended('model:turn_a:1', { status: 'failed', errorCode: 'model_rate_limit', endedAtMs: t0 + 2 });
    for (const turnId of ['turn_a', 'turn_b', 'turn_c']) spans.ended(`turn:${turnId}`, { status: 'succeeded', errorCode: null, endedAtMs: t0 + 3 });
    expect(spans.traceIdOf('turn_a')).toBeUndefined();
    await flushSpans();

    const byTurn = (turnId: string, name: string) => receiver.spans.find((span) => span.attributes['turnchart.turn.id'] === turnId && span.name === name)!;
    const turnA = byTurn('turn_a', 'invoke_agent default');
    expect([turnA.traceId, turnA.parentSpanId]).toEqual([traceId, parentId]);
    const model = byTurn('turn_a', 'chat m');
    expect([model.traceId, model.parentSpanId]).toEqual([traceId, turnA.spanId]);
    expect(model.statusCode).toBe(OTLP_STATUS.ERROR);
    expect(model.attributes['error.type']).toBe('model_rate_limit');
    const turnB = byTurn('turn_b', 'invoke_agent');
    expect([turnB.traceId, turnB.parentSpanId]).toEqual([traceId, parentId]);
    const turnC = byTurn('turn_c', 'invoke_agent');
    expect(turnC.traceId).not.toBe(traceId);
    expect(turnC.parentSpanId).toBe('');
  });
});
