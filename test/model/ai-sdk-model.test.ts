import { APICallError, type LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { aiSdkModel, createRuntime, sqliteStorage, type ModelRequest, type ModelStreamEvent, type Runtime } from '../../src/index.js';
import { apiError, collect, EMPTY_REQUEST, failureOf, FINISH, mockStreaming } from '../support/ai-sdk-mock.js';
import { readFileTool } from '../support/harness.js';

describe('aiSdkModel request translation', () => {
  it('turns a request into the LanguageModelV3 call options', async () => {
    const mock = mockStreaming([FINISH]);
    const signal = new AbortController().signal;
    const schema = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
    const request: ModelRequest = {
      system: [
        { key: 'core/agent-system', content: 'You are careful.' },
        { key: 'extra', content: 'Be brief.' },
      ],
      messages: [
        { role: 'user', text: 'read four files' },
        {
          role: 'assistant',
          text: 'reading',
          reasoning: 'four calls',
          toolCalls: [
            { id: 'c1', name: 'read_file', argumentsText: '{"path":"a"}' },
            { id: 'c2', name: 'read_file', argumentsText: '{"path": ' },
            { id: 'c3', name: 'write_file', argumentsText: '{"path":"/etc/x"}' },
            { id: 'c4', name: 'long_job', argumentsText: '{}' },
          ],
        },
        { role: 'tool', toolCallId: 'c1', toolName: 'read_file', status: 'success', content: 'A' },
        { role: 'tool', toolCallId: 'c2', toolName: 'read_file', status: 'error', content: 'InvalidArguments: bad' },
        { role: 'tool', toolCallId: 'c3', toolName: 'write_file', status: 'denied', content: 'protected path' },
        { role: 'tool', toolCallId: 'c4', toolName: 'long_job', status: 'interrupted', content: 'stopped' },
        { role: 'assistant', text: '', reasoning: '', toolCalls: [] },
        { role: 'user', text: 'thanks' },
      ],
      tools: [{ name: 'read_file', description: 'Read a file', inputSchema: schema }],
      maxOutputTokens: 512,
    };

    await collect(aiSdkModel(mock).stream(request, { signal }));

    expect(mock.doStreamCalls).toHaveLength(1);
    expect(mock.doStreamCalls[0]).toEqual({
      prompt: [
        { role: 'system', content: 'You are careful.' },
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'read four files' }] },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'four calls' },
            { type: 'text', text: 'reading' },
            { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'a' } },
            // Malformed arguments are replayed as `{}`: the error result already told the model.
            { type: 'tool-call', toolCallId: 'c2', toolName: 'read_file', input: {} },
            { type: 'tool-call', toolCallId: 'c3', toolName: 'write_file', input: { path: '/etc/x' } },
            { type: 'tool-call', toolCallId: 'c4', toolName: 'long_job', input: {} },
          ],
        },
        {
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: { type: 'text', value: 'A' } },
            { type: 'tool-result', toolCallId: 'c2', toolName: 'read_file', output: { type: 'error-text', value: '[error] InvalidArguments: bad' } },
            { type: 'tool-result', toolCallId: 'c3', toolName: 'write_file', output: { type: 'error-text', value: '[denied] protected path' } },
            { type: 'tool-result', toolCallId: 'c4', toolName: 'long_job', output: { type: 'error-text', value: '[interrupted] stopped' } },
          ],
        },
        // The empty assistant message is left out.
        { role: 'user', content: [{ type: 'text', text: 'thanks' }] },
      ],
      maxOutputTokens: 512,
      tools: [{ type: 'function', name: 'read_file', description: 'Read a file', inputSchema: schema }],
      // The adapter's own signal, so a stall can abort the provider request too; the caller's cancel reaches it.
      abortSignal: expect.any(AbortSignal),
    });
  });

  it("sends tool calls and results under the provider's ids, and provider data exactly as stored (RT-15, RT-18)", async () => {
    const mock = mockStreaming([FINISH]);
    const signature = { anthropic: { signature: 'c2lnLTE=', nested: { list: [1, 'two', null, true] } } };
    const request: ModelRequest = {
      system: [],
      messages: [
        { role: 'user', text: 'go' },
        {
          role: 'assistant',
          text: 'Reading.',
          reasoning: 'first thought, second thought',
          toolCalls: [
            // The runtime renamed this one: the provider reused `call_0`.
            { id: 'call_minted', providerId: 'call_0', name: 'read_file', argumentsText: '{"path":"a"}', providerMetadata: { google: { thoughtSignature: 'ts' } } },
            { id: 'call_1', name: 'read_file', argumentsText: '{"path":"b"}' },
          ],
          providerData: {
            blocks: [
              { type: 'reasoning', text: 'first thought', providerMetadata: signature },
              { type: 'tool_call', index: 0 },
              { type: 'reasoning', text: ', second thought', providerMetadata: { anthropic: { redactedData: 'enc' } } },
              { type: 'text', text: 'Reading.' },
            ],
          },
        },
        { role: 'tool', toolCallId: 'call_minted', toolName: 'read_file', status: 'success', content: 'A' },
        { role: 'tool', toolCallId: 'call_1', toolName: 'read_file', status: 'success', content: 'B' },
      ],
      tools: [],
      maxOutputTokens: 100,
    };

    await collect(aiSdkModel(mock).stream(request, { signal: new AbortController().signal }));

    expect(mock.doStreamCalls[0]!.prompt.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'first thought', providerOptions: signature },
          { type: 'tool-call', toolCallId: 'call_0', toolName: 'read_file', input: { path: 'a' }, providerOptions: { google: { thoughtSignature: 'ts' } } },
          { type: 'reasoning', text: ', second thought', providerOptions: { anthropic: { redactedData: 'enc' } } },
          { type: 'text', text: 'Reading.' },
          // A call no block places still goes out, last.
          { type: 'tool-call', toolCallId: 'call_1', toolName: 'read_file', input: { path: 'b' } },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'call_0', toolName: 'read_file', output: { type: 'text', value: 'A' } },
          { type: 'tool-result', toolCallId: 'call_1', toolName: 'read_file', output: { type: 'text', value: 'B' } },
        ],
      },
    ]);
  });

  it('sends no tools when there are none and passes provider options through', async () => {
    const mock = mockStreaming([FINISH]);
    await collect(aiSdkModel(mock, { providerOptions: { openai: { reasoningEffort: 'low' } } }).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));
    const call = mock.doStreamCalls[0]!;
    expect(call).not.toHaveProperty('tools');
    expect(call).not.toHaveProperty('temperature');
    expect(call.providerOptions).toEqual({ openai: { reasoningEffort: 'low' } });
  });

  it('has default capabilities that options override', () => {
    const mock = mockStreaming();
    expect(aiSdkModel(mock).capabilities).toEqual({ contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 });
    expect(aiSdkModel(mock, { capabilities: { contextWindow: 1_000 } }).capabilities).toEqual({
      contextWindow: 1_000,
      maxOutputTokens: 8_192,
      maxReasoningTokens: 0,
    });
  });
});

describe('aiSdkModel stream translation', () => {
  it('yields deltas and one completed response with the tool calls', async () => {
    const mock = mockStreaming([
      { type: 'stream-start', warnings: [] },
      { type: 'response-metadata', id: 'r1', modelId: 'm' },
      { type: 'reasoning-start', id: 'r' },
      { type: 'reasoning-delta', id: 'r', delta: 'think ' },
      { type: 'reasoning-delta', id: 'r', delta: 'hard' },
      { type: 'reasoning-end', id: 'r' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Hello ' },
      { type: 'text-delta', id: 't', delta: 'world' },
      { type: 'text-end', id: 't' },
      { type: 'tool-input-start', id: 'c1', toolName: 'read_file' },
      { type: 'tool-input-delta', id: 'c1', delta: '{"path":' },
      { type: 'tool-input-delta', id: 'c1', delta: '"a"}' },
      { type: 'tool-input-end', id: 'c1' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: '{"path":"a"}' },
      { type: 'tool-call', toolCallId: 'ws', toolName: 'web_search', input: '{}', providerExecuted: true },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'read_file', input: '{"path": ' },
      { type: 'raw', rawValue: { anything: true } },
      { ...FINISH, finishReason: { unified: 'tool-calls', raw: 'tool_use' } },
    ]);

    const events = await collect(aiSdkModel(mock).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));

    expect(events).toEqual([
      { type: 'reasoning_delta', text: 'think ' },
      { type: 'reasoning_delta', text: 'hard' },
      { type: 'text_delta', text: 'Hello ' },
      { type: 'text_delta', text: 'world' },
      {
        type: 'response_completed',
        response: {
          text: 'Hello world',
          reasoning: 'think hard',
          // The provider-executed call is not the runtime's to run; malformed input passes through raw.
          toolCalls: [
            { id: 'c1', name: 'read_file', argumentsText: '{"path":"a"}' },
            { id: 'c2', name: 'read_file', argumentsText: '{"path": ' },
          ],
          finishReason: 'tool_calls',
        },
        usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, reasoningTokens: 0 },
        // The model the provider says answered (its `response-metadata` part), for traces.
        responseModel: 'm',
      },
    ]);
  });

  it('keeps provider metadata of text, reasoning and tool-call parts, in order, as plain JSON (RT-18)', async () => {
    const mock = mockStreaming([
      { type: 'reasoning-start', id: 'r1', providerMetadata: { anthropic: { phase: 'start' } } },
      { type: 'reasoning-delta', id: 'r1', delta: 'think' },
      // The signature arrives last, on an empty delta: the block keeps the latest metadata, as the AI SDK does.
      { type: 'reasoning-delta', id: 'r1', delta: '', providerMetadata: { anthropic: { signature: 'sig==' } } },
      { type: 'reasoning-end', id: 'r1' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: '{}', providerMetadata: { google: { thoughtSignature: 'ts', dropped: undefined } } },
      // Redacted reasoning: no text, only data the provider needs back.
      { type: 'reasoning-start', id: 'r2', providerMetadata: { anthropic: { redactedData: 'opaque' } } },
      { type: 'reasoning-end', id: 'r2' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'done' },
      { type: 'text-end', id: 't', providerMetadata: { openai: { itemId: 'msg_1' } } },
      // An empty text block without metadata is nothing to send back.
      { type: 'text-start', id: 'empty' },
      { type: 'text-end', id: 'empty' },
      FINISH,
    ]);

    const events = await collect(aiSdkModel(mock).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));

    expect(events.at(-1)).toEqual({
      type: 'response_completed',
      response: {
        text: 'done',
        reasoning: 'think',
        toolCalls: [{ id: 'c1', name: 'read_file', argumentsText: '{}', providerMetadata: { google: { thoughtSignature: 'ts' } } }],
        providerData: {
          blocks: [
            { type: 'reasoning', text: 'think', providerMetadata: { anthropic: { signature: 'sig==' } } },
            { type: 'tool_call', index: 0 },
            { type: 'reasoning', text: '', providerMetadata: { anthropic: { redactedData: 'opaque' } } },
            { type: 'text', text: 'done', providerMetadata: { openai: { itemId: 'msg_1' } } },
          ],
        },
        finishReason: 'stop',
      },
      usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, reasoningTokens: 0 },
    });
    // `undefined` members are gone: what is sent now is what storage gives back later.
    const completed = events.at(-1) as Extract<ModelStreamEvent, { type: 'response_completed' }>;
    expect(Object.keys(completed.response.toolCalls[0]!.providerMetadata!.google!)).toEqual(['thoughtSignature']);
  });

  it('reports usage with cached and reasoning tokens, none when the provider counts nothing, and the finish reason', async () => {
    const usage = (
      input: Partial<Record<'total' | 'noCache' | 'cacheRead' | 'cacheWrite', number>>,
      output: Partial<Record<'total' | 'text' | 'reasoning', number>>,
    ): LanguageModelV3StreamPart => ({
      type: 'finish',
      finishReason: { unified: 'length', raw: 'max_tokens' },
      usage: {
        inputTokens: { total: input.total, noCache: input.noCache, cacheRead: input.cacheRead, cacheWrite: input.cacheWrite },
        outputTokens: { total: output.total, text: output.text, reasoning: output.reasoning },
      },
    });
    const mock = mockStreaming(
      [usage({ total: 1200, noCache: 200, cacheRead: 1000 }, { total: 300, text: 100, reasoning: 200 })],
      // No totals: the parts are added up.
      [usage({ noCache: 5, cacheRead: 7, cacheWrite: 1 }, { text: 2, reasoning: 3 })],
      [usage({}, {})],
    );
    const port = aiSdkModel(mock);
    const signal = new AbortController().signal;
    const [first, second, none] = [await collect(port.stream(EMPTY_REQUEST, { signal })), await collect(port.stream(EMPTY_REQUEST, { signal })), await collect(port.stream(EMPTY_REQUEST, { signal }))];
    expect(first).toEqual([
      {
        type: 'response_completed',
        response: { text: '', reasoning: '', toolCalls: [], finishReason: 'length' },
        usage: { inputTokens: 1200, outputTokens: 300, cachedInputTokens: 1000, reasoningTokens: 200 },
      },
    ]);
    expect(second[0]).toMatchObject({ usage: { inputTokens: 13, outputTokens: 5, cachedInputTokens: 7, reasoningTokens: 3 } });
    expect(none[0]).not.toHaveProperty('usage');
  });

  it('fails a response the provider finished with an error', async () => {
    const mock = mockStreaming([{ type: 'text-delta', id: 't', delta: 'par' }, { ...FINISH, finishReason: { unified: 'error', raw: 'server_error' } }]);
    const error = await failureOf(aiSdkModel(mock).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));
    expect(error).toMatchObject({ kind: 'provider', semanticOutputProduced: true, message: expect.stringContaining('server_error') });
  });

  it('just ends when the stream has no finish part', async () => {
    const mock = mockStreaming([{ type: 'text-delta', id: 't', delta: 'cut' }]);
    const events = await collect(aiSdkModel(mock).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));
    expect(events).toEqual([{ type: 'text_delta', text: 'cut' }]);
  });
});

describe('aiSdkModel errors', () => {
  const overflow = () =>
    new APICallError({
      message: "This model's maximum context length is 128000 tokens.",
      url: 'https://api.example/v1/chat',
      requestBodyValues: {},
      statusCode: 400,
      responseBody: '{"error":{"code":"context_length_exceeded"}}',
    });

  it('maps an error part to a provider error, noting output already produced', async () => {
    const mock = mockStreaming([
      { type: 'text-delta', id: 't', delta: 'partial' },
      { type: 'error', error: new Error('upstream overloaded') },
    ]);
    const error = await failureOf(aiSdkModel(mock).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));
    expect(error).toMatchObject({ kind: 'provider', message: 'upstream overloaded', semanticOutputProduced: true });
  });

  it('maps a thrown context-length error to overflow', async () => {
    const mock = new MockLanguageModelV3({
      doStream: async () => {
        throw overflow();
      },
    });
    const error = await failureOf(aiSdkModel(mock).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));
    expect(error).toMatchObject({ kind: 'overflow', semanticOutputProduced: false });
    expect(error.message).toMatch(/maximum context length/);
  });

  it.each([
    ['Anthropic', 400, 'prompt is too long: 201234 tokens > 200000 maximum', undefined],
    ['OpenAI, by its code only', 400, 'Bad request', '{"error":{"message":"Invalid","code":"context_length_exceeded"}}'],
    ['vLLM', 400, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", undefined],
    ['Gemini', 400, 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).', undefined],
    ['a body too large (HTTP 413)', 413, 'Request Entity Too Large', undefined],
  ])('maps a context overflow from %s to overflow', async (_name, status, message, responseBody) => {
    const mock = new MockLanguageModelV3({
      doStream: async () => {
        throw apiError(status, message, responseBody === undefined ? {} : { responseBody });
      },
    });
    const error = await failureOf(aiSdkModel(mock, { maxRetries: 0 }).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));
    expect(error).toMatchObject({ kind: 'overflow', semanticOutputProduced: false, message });
  });

  it('maps an overflow reported in the stream (an error part) to overflow, and a rate limit to a provider error', async () => {
    const mock = mockStreaming(
      [{ type: 'error', error: { message: 'context window exceeded', code: 'context_length_exceeded' } }],
      [{ type: 'error', error: { message: 'Request too large for gpt-4o on tokens per min (TPM)', code: 'rate_limit_exceeded' } }],
    );
    const port = aiSdkModel(mock);
    expect(await failureOf(port.stream(EMPTY_REQUEST, { signal: new AbortController().signal }))).toMatchObject({ kind: 'overflow' });
    expect(await failureOf(port.stream(EMPTY_REQUEST, { signal: new AbortController().signal }))).toMatchObject({ kind: 'provider' });
  });

  it('maps other thrown API errors to provider errors', async () => {
    const mock = new MockLanguageModelV3({
      doStream: async () => {
        throw new APICallError({ message: 'Unauthorized', url: 'https://api.example', requestBodyValues: {}, statusCode: 401 });
      },
    });
    const error = await failureOf(aiSdkModel(mock).stream(EMPTY_REQUEST, { signal: new AbortController().signal }));
    expect(error).toMatchObject({ kind: 'provider', message: 'Unauthorized' });
  });

  it('cancels the provider stream when the call is aborted mid-read', async () => {
    let cancelled = false;
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start(controller) {
        // One delta, then silence: the next read waits until the abort cancels the stream.
        controller.enqueue({ type: 'text-delta', id: 't', delta: 'first' });
      },
      cancel() {
        cancelled = true;
      },
    });
    const mock = new MockLanguageModelV3({ doStream: { stream } });
    const controller = new AbortController();
    const iterator = aiSdkModel(mock).stream(EMPTY_REQUEST, { signal: controller.signal })[Symbol.asyncIterator]();

    expect(await iterator.next()).toEqual({ done: false, value: { type: 'text_delta', text: 'first' } });
    const pending = iterator.next();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ kind: 'provider', message: 'model call aborted', semanticOutputProduced: true });
    expect(cancelled).toBe(true);
    expect(stream.locked).toBe(false);
    // The provider's request itself was told to stop.
    expect(mock.doStreamCalls[0]!.abortSignal!.aborted).toBe(true);
  });
});

describe('aiSdkModel end to end', () => {
  let runtime: Runtime | undefined;
  afterEach(async () => {
    await runtime?.shutdown();
    runtime = undefined;
  });

  it('runs a turn with a tool call through the real runtime', async () => {
    const log: string[] = [];
    const mock = mockStreaming(
      [
        { type: 'text-delta', id: 't', delta: 'Let me look.' },
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'read_file', input: '{"path":"a.txt"}' },
        { ...FINISH, finishReason: { unified: 'tool-calls', raw: 'tool_calls' } },
      ],
      [{ type: 'text-delta', id: 't', delta: 'It says ' }, { type: 'text-delta', id: 't', delta: 'hello.' }, FINISH],
    );
    runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: aiSdkModel(mock), tools: [readFileTool(log)] });
    const session = await runtime.createSession({ agent: 'default', permissionMode: 'ask' });

    const started = await session.startTurn({ clientRequestId: 'c-1', input: [{ type: 'text', text: 'read a.txt' }] });
    if (!started.ok) throw new Error(`turn refused: ${JSON.stringify(started.error)}`);
    expect(await session.waitForTurn(started.turnId)).toEqual({
      status: 'completed',
      finalText: 'It says hello.',
      finishReason: 'stop',
      // Both calls' usage, summed.
      usage: { inputTokens: 20, outputTokens: 10, cachedInputTokens: 0, reasoningTokens: 0 },
    });

    expect(log).toEqual(['read_file a.txt']);
    expect(mock.doStreamCalls).toHaveLength(2);
    const first = mock.doStreamCalls[0]!;
    expect(first.prompt[0]).toMatchObject({ role: 'system' });
    expect(first.tools).toContainEqual(expect.objectContaining({ type: 'function', name: 'read_file', description: 'Read a file' }));
    // The user's request, then the first world-state sample (the sandbox policy) as a user message.
    expect(first.prompt.slice(1, 2)).toEqual([{ role: 'user', content: [{ type: 'text', text: 'read a.txt' }] }]);
    expect(first.prompt[2]).toMatchObject({ role: 'user', content: [{ type: 'text', text: expect.stringMatching(/^<sandbox_policy>/) }] });
    expect(mock.doStreamCalls[1]!.prompt.slice(3)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me look.' },
          { type: 'tool-call', toolCallId: 'call-1', toolName: 'read_file', input: { path: 'a.txt' } },
        ],
      },
      {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: 'call-1', toolName: 'read_file', output: { type: 'text', value: 'contents of a.txt' } }],
      },
    ]);
  });
});
