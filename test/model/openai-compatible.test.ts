import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { afterEach, describe, expect, it } from 'vitest';
import { aiSdkModel, createRuntime, sqliteStorage, type AiSdkModelOptions, type AssistantMessage, type Runtime, type SessionHandle, type UpdateEnvelope } from '../../src/index.js';
import { startFakeOpenAiServer, sse, type ChatRequestBody, type FakeOpenAiServer, type FakeReply } from '../support/fake-openai-server.js';
import { readFileTool, runTurn, types } from '../support/harness.js';

/**
 * A real provider package (`@ai-sdk/openai-compatible`) over real HTTP, against a server on loopback
 * that streams what OpenAI-compatible servers stream: the whole path from the runtime to the wire.
 */

const READ_A = { id: 'call_0', name: 'read_file', arguments: '{"path":"a.txt"}' };

let server: FakeOpenAiServer | undefined;
let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.shutdown();
  runtime = undefined;
  await server?.close();
  server = undefined;
});

async function start(replies: FakeReply[], options: AiSdkModelOptions & { providerName?: string } = {}): Promise<{ session: SessionHandle; updates: UpdateEnvelope[] }> {
  server = await startFakeOpenAiServer(replies);
  const { providerName = 'openai-compatible', ...adapter } = options;
  const provider = createOpenAICompatible({ name: providerName, baseURL: server.baseUrl, apiKey: 'sk-test', includeUsage: true });
  runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: aiSdkModel(provider.chatModel('fake-model'), adapter), tools: [readFileTool()] });
  const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
  const updates: UpdateEnvelope[] = [];
  session.updates$.subscribe((u) => updates.push(u));
  return { session, updates };
}

/** The request's messages after the system message and world state: the conversation proper. */
function conversation(body: ChatRequestBody) {
  return body.messages.filter((m) => m.role !== 'system' && !(m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('<sandbox_policy>')));
}

const sent = () => server!.requests.map((r) => r.body);

describe('an OpenAI-compatible provider over HTTP', () => {
  it('runs a turn with a tool call split across chunks, and sums the usage of both calls', async () => {
    const { session } = await start([
      { chunks: sse.reply({ text: 'Let me look.', calls: [{ ...READ_A, pieces: 4 }], usage: { prompt_tokens: 120, completion_tokens: 20, cached_tokens: 100 } }) },
      { chunks: sse.reply({ reasoning: 'It is short.', text: 'It says hello.', usage: { prompt_tokens: 160, completion_tokens: 12, reasoning_tokens: 4 } }) },
    ]);

    expect((await runTurn(session, 'read a.txt')).outcome).toEqual({
      status: 'completed',
      finalText: 'It says hello.',
      finishReason: 'stop',
      usage: { inputTokens: 280, outputTokens: 32, cachedInputTokens: 100, reasoningTokens: 4 },
    });

    const [first, second] = server!.requests;
    expect(first!.headers.authorization).toBe('Bearer sk-test');
    expect(first!.body).toMatchObject({ model: 'fake-model', stream: true, stream_options: { include_usage: true }, max_tokens: 8192 });
    expect(first!.body.tools?.map((t) => t.function.name)).toContain('read_file');
    expect(conversation(second!.body)).toEqual([
      { role: 'user', content: 'read a.txt' },
      { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: 'contents of a.txt' },
    ]);
  });

  it("retries a 429 after the provider's retry-after, then completes", async () => {
    const delays: number[] = [];
    const { session } = await start(
      [
        { status: 429, headers: { 'retry-after': '2' }, body: { error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' } } },
        { chunks: sse.reply({ text: 'Fine now.' }) },
      ],
      { sleep: async (ms) => void delays.push(ms) },
    );
    expect((await runTurn(session, 'hello')).outcome).toMatchObject({ status: 'completed', finalText: 'Fine now.' });
    expect(delays).toEqual([2_000]);
    expect(sent()).toHaveLength(2);
    // The retry sent the same request again.
    expect(sent()[1]).toEqual(sent()[0]);
  });

  it('fails model_error when the rate limit outlasts the retries', async () => {
    const limited: FakeReply = { status: 429, headers: { 'retry-after-ms': '10' }, body: { error: { message: 'Rate limit reached', code: 'rate_limit_exceeded' } } };
    const { session } = await start([limited, limited, limited], { sleep: async () => undefined, maxRetries: 2 });
    expect((await runTurn(session, 'hello')).outcome).toEqual({ status: 'failed', code: 'model_error', message: 'Rate limit reached (after 2 retries)' });
    expect(sent()).toHaveLength(3);
  });

  it('compacts and resubmits once on a context-length error (RT-10, CP-1)', async () => {
    const overflow: FakeReply = {
      status: 400,
      body: { error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", type: 'invalid_request_error', code: 'context_length_exceeded' } },
    };
    const { session } = await start([overflow, { chunks: sse.reply({ text: 'The user asked about a.txt.' }) }, { chunks: sse.reply({ text: 'Answered after compacting.' }) }]);
    expect((await runTurn(session, 'tell me about a.txt')).outcome).toMatchObject({ status: 'completed', finalText: 'Answered after compacting.' });

    const [, summary, resubmitted] = sent();
    // The summary call: no tools, the conversation, the instruction last.
    expect(summary!.tools).toBeUndefined();
    expect(summary!.messages.at(-1)!.content).toMatch(/^Summarize the conversation above/);
    expect(JSON.stringify(resubmitted!.messages)).toContain('<conversation_summary>\\nThe user asked about a.txt.\\n</conversation_summary>');
  });

  it('fails model_error when the resubmitted request overflows again: once only', async () => {
    const overflow: FakeReply = { status: 400, body: { error: { message: 'prompt is too long: 9000 tokens > 8192 maximum' } } };
    const { session } = await start([overflow, { chunks: sse.reply({ text: 'summary' }) }, overflow]);
    expect((await runTurn(session, 'hi')).outcome).toMatchObject({ status: 'failed', code: 'model_error', message: expect.stringContaining('prompt is too long') });
    expect(sent()).toHaveLength(3);
  });

  it('ends a stream that stalls mid-way as model_error and discards the draft', async () => {
    // A real, short stall timeout: the provider's silence is the behaviour under test.
    const { session, updates } = await start([{ chunks: sse.reply({ text: 'Half an answer and then' }).slice(0, 3), stall: true }], { stallTimeoutMs: 150 });
    const { outcome } = await runTurn(session, 'hi');
    expect(outcome).toEqual({ status: 'failed', code: 'model_error', message: 'the model stream stalled: nothing arrived for 150 ms' });
    expect(types(updates)).toContain('text_delta');
    expect(types(updates).slice(-3)).toEqual(['draft_cleared', 'phase_changed', 'turn_finished']);
  });

  it('keeps the ids of a server that numbers calls from call_0 in every response', async () => {
    const { session } = await start([
      { chunks: sse.reply({ calls: [READ_A] }) },
      { chunks: sse.reply({ text: 'a says hello.' }) },
      { chunks: sse.reply({ calls: [{ ...READ_A, arguments: '{"path":"b.txt"}' }] }) },
      { chunks: sse.reply({ text: 'b says hello.' }) },
    ]);
    expect((await runTurn(session, 'read a')).outcome).toMatchObject({ status: 'completed' });
    expect((await runTurn(session, 'read b')).outcome).toMatchObject({ status: 'completed', finalText: 'b says hello.' });

    // The provider sees its own ids, each result after its call.
    const last = conversation(sent()[3]!);
    expect(last.map((m) => [m.role, m.tool_calls?.[0]?.id ?? m.tool_call_id ?? null])).toEqual([
      ['user', null],
      ['assistant', 'call_0'],
      ['tool', 'call_0'],
      ['assistant', null],
      ['user', null],
      ['assistant', 'call_0'],
      ['tool', 'call_0'],
    ]);
    expect(last[6]).toMatchObject({ content: 'contents of b.txt' });
    // The runtime stored its own.
    const calls = (await runtime!.inspectContextWindow(session.id)).conversation.flatMap((m) => (m.role === 'assistant' ? (m as AssistantMessage).toolCalls : []));
    expect(calls.map((c) => c.providerId ?? c.id)).toEqual(['call_0', 'call_0']);
    expect(calls[0]!.id).not.toBe(calls[1]!.id);
  });

  it("sends Gemini's thought signature and the reasoning back exactly as received (RT-18)", async () => {
    const extraContent = { google: { thought_signature: 'CiQB0e2Kb+/sig==' } };
    const { session } = await start(
      [{ chunks: sse.reply({ reasoning: 'Need the file.', calls: [{ ...READ_A, extraContent }] }) }, { chunks: sse.reply({ text: 'Done.' }) }],
      // The provider package sends thought signatures back only under this name (see README).
      { providerName: 'google' },
    );
    expect((await runTurn(session, 'read a')).outcome).toMatchObject({ status: 'completed', finalText: 'Done.' });
    const assistant = conversation(sent()[1]!).find((m) => m.role === 'assistant')!;
    expect(assistant.reasoning_content).toBe('Need the file.');
    expect(assistant.tool_calls).toEqual([{ id: 'call_0', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' }, extra_content: extraContent }]);
  });
});
