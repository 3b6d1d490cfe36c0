import { APICallError, type LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { aiSdkModel, createRuntime, ModelCallError, sqliteStorage, type ModelRequest, type ModelStreamEvent, type Runtime } from '../../src/index.js';
import { readFileTool } from '../support/harness.js';

const FINISH: LanguageModelV3StreamPart = {
  type: 'finish',
  finishReason: { unified: 'stop', raw: 'stop' },
  usage: {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 5, text: 5, reasoning: 0 },
  },
};

function mockStreaming(...responses: LanguageModelV3StreamPart[][]): MockLanguageModelV3 {
  return new MockLanguageModelV3({ doStream: responses.map((chunks) => ({ stream: simulateReadableStream({ chunks }) })) });
}

const EMPTY_REQUEST: ModelRequest = { system: [], messages: [{ role: 'user', text: 'hi' }], tools: [], maxOutputTokens: 100 };

async function collect(events: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

async function failureOf(events: AsyncIterable<ModelStreamEvent>): Promise<ModelCallError> {
  const error = await collect(events).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelCallError);
  return error as ModelCallError;
}

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
      abortSignal: signal,
    });
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
        },
      },
    ]);
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
    expect(await session.waitForTurn(started.turnId)).toEqual({ status: 'completed', finalText: 'It says hello.' });

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
