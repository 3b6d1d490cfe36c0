import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiSdkModel, TurnchartError, type AiSdkModelOptions } from '../../src/index.js';
import { apiError, collect, EMPTY_REQUEST, failureOf, FINISH } from '../support/ai-sdk-mock.js';

const ANSWER: LanguageModelV3StreamPart[] = [{ type: 'text-delta', id: 't', delta: 'ok' }, FINISH];

/** A model whose calls fail with the given errors, in order, and then answer. */
function failingThen(...errors: Error[]) {
  const queue = [...errors];
  return new MockLanguageModelV3({
    doStream: async () => {
      const next = queue.shift();
      if (next) throw next;
      return { stream: simulateReadableStream({ chunks: ANSWER }) };
    },
  });
}

/** The injected wait: records each delay and returns at once, so no test waits for real. */
function recordingSleep() {
  const delays: number[] = [];
  const sleep: NonNullable<AiSdkModelOptions['sleep']> = async (ms) => {
    delays.push(ms);
  };
  return { delays, sleep };
}

const rateLimited = (headers: Record<string, string> = {}) => apiError(429, 'Rate limit reached', { responseHeaders: headers });
const signal = () => new AbortController().signal;

describe('aiSdkModel retries', () => {
  it("retries a rate limit after the provider's retry-after, in seconds, milliseconds or as a date", async () => {
    const { delays, sleep } = recordingSleep();
    const now = Date.parse('2025-01-01T00:00:00Z');
    const mock = failingThen(rateLimited({ 'retry-after': '3' }), rateLimited({ 'retry-after-ms': '250' }), rateLimited({ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }));
    const events = await collect(aiSdkModel(mock, { maxRetries: 3, sleep, now: () => now }).stream(EMPTY_REQUEST, { signal: signal() }));
    expect(delays).toEqual([3_000, 250, 7_000]);
    expect(mock.doStreamCalls).toHaveLength(4);
    expect(events.map((e) => e.type)).toEqual(['text_delta', 'response_completed']);
  });

  it('backs off exponentially with jitter when the provider names no wait, and gives up after maxRetries', async () => {
    const { delays, sleep } = recordingSleep();
    const jitter = [0, 0.5, 0.999];
    const unavailable = () => apiError(503, 'Service Unavailable');
    const mock = failingThen(unavailable(), unavailable(), unavailable(), unavailable());
    const port = aiSdkModel(mock, { maxRetries: 3, retryBaseDelayMs: 100, retryMaxDelayMs: 300, sleep, random: () => jitter.shift()! });
    const error = await failureOf(port.stream(EMPTY_REQUEST, { signal: signal() }));
    // Between half and all of 100, 200, then 400 capped at 300.
    expect(delays).toEqual([50, 150, 150 + 0.999 * 150]);
    expect(error).toMatchObject({ kind: 'provider', message: 'Service Unavailable (after 3 retries)', semanticOutputProduced: false });
    expect(mock.doStreamCalls).toHaveLength(4);
  });

  it('does not retry what waiting cannot cure: a bad request, an overflow, an exhausted quota, a wait longer than allowed', async () => {
    const { delays, sleep } = recordingSleep();
    const cases = [
      apiError(400, 'Invalid tool schema'),
      apiError(400, "This model's maximum context length is 10 tokens"),
      apiError(429, 'You exceeded your current quota', { responseBody: '{"error":{"code":"insufficient_quota"}}' }),
      rateLimited({ 'retry-after': '3600' }),
    ];
    const errors = [];
    for (const error of cases) errors.push(await failureOf(aiSdkModel(failingThen(error), { sleep }).stream(EMPTY_REQUEST, { signal: signal() })));
    expect(delays).toEqual([]);
    expect(errors.map((e) => e.kind)).toEqual(['provider', 'overflow', 'provider', 'provider']);
    expect(errors[3]!.message).toBe('Rate limit reached (the provider asked to retry after 3600000 ms, longer than the 60000 ms allowed)');
  });

  it('never retries once output was produced (RT-18): the draft is already on screen', async () => {
    const { delays, sleep } = recordingSleep();
    const mock = new MockLanguageModelV3({
      doStream: [{ stream: simulateReadableStream<LanguageModelV3StreamPart>({ chunks: [{ type: 'text-delta', id: 't', delta: 'half' }, { type: 'error', error: apiError(503, 'overloaded') }] }) }],
    });
    const error = await failureOf(aiSdkModel(mock, { sleep }).stream(EMPTY_REQUEST, { signal: signal() }));
    expect(error).toMatchObject({ kind: 'provider', message: 'overloaded', semanticOutputProduced: true });
    expect(delays).toEqual([]);
  });

  it('retries a transient error the stream reports before any output', async () => {
    const { delays, sleep } = recordingSleep();
    const mock = new MockLanguageModelV3({
      doStream: [
        { stream: simulateReadableStream<LanguageModelV3StreamPart>({ chunks: [{ type: 'stream-start', warnings: [] }, { type: 'error', error: apiError(502, 'Bad Gateway') }] }) },
        { stream: simulateReadableStream({ chunks: ANSWER }) },
      ],
    });
    const events = await collect(aiSdkModel(mock, { sleep, random: () => 0 }).stream(EMPTY_REQUEST, { signal: signal() }));
    expect(delays).toEqual([500]);
    expect(events.at(-1)).toMatchObject({ type: 'response_completed', response: { text: 'ok' } });
  });

  it('ends the wait at once when the call is cancelled', async () => {
    let waiting!: () => void;
    const inWait = new Promise<void>((resolve) => (waiting = resolve));
    // A wait that only a cancel ends, as the default one does.
    const sleep: NonNullable<AiSdkModelOptions['sleep']> = (_ms, abort) =>
      new Promise((_resolve, reject) => {
        waiting();
        abort.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      });
    const mock = failingThen(rateLimited({ 'retry-after': '30' }));
    const controller = new AbortController();
    const failure = failureOf(aiSdkModel(mock, { sleep }).stream(EMPTY_REQUEST, { signal: controller.signal }));
    await inWait;
    controller.abort();
    expect(await failure).toMatchObject({ kind: 'provider', message: 'model call aborted' });
    expect(mock.doStreamCalls).toHaveLength(1);
  });

  it('refuses options out of range', () => {
    expect(() => aiSdkModel(failingThen(), { maxRetries: -1 })).toThrow(TurnchartError);
    expect(() => aiSdkModel(failingThen(), { stallTimeoutMs: 1.5 })).toThrow(/stallTimeoutMs/);
  });
});

describe('aiSdkModel stall timeout', () => {
  // Real, short timeouts: how long the provider stays silent is the behaviour under test.
  it('ends a stream that stops sending mid-way as a provider error, aborting the request', async () => {
    let cancelled = false;
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start(controller) {
        controller.enqueue({ type: 'text-delta', id: 't', delta: 'partial' });
      },
      cancel() {
        cancelled = true;
      },
    });
    const mock = new MockLanguageModelV3({ doStream: { stream } });
    const error = await failureOf(aiSdkModel(mock, { stallTimeoutMs: 40 }).stream(EMPTY_REQUEST, { signal: signal() }));
    expect(error).toMatchObject({ kind: 'provider', message: 'the model stream stalled: nothing arrived for 40 ms', semanticOutputProduced: true });
    expect(cancelled).toBe(true);
    expect(mock.doStreamCalls[0]!.abortSignal!.aborted).toBe(true);
  });

  it('ends a call whose response never starts', async () => {
    const mock = new MockLanguageModelV3({
      doStream: (options) =>
        new Promise((_resolve, reject) => options.abortSignal!.addEventListener('abort', () => reject(new Error('This operation was aborted')), { once: true })),
    });
    const error = await failureOf(aiSdkModel(mock, { stallTimeoutMs: 40 }).stream(EMPTY_REQUEST, { signal: signal() }));
    expect(error).toMatchObject({ kind: 'provider', message: 'the model stream stalled: nothing arrived for 40 ms', semanticOutputProduced: false });
  });

  it('does not count a slow consumer as a stalled provider', async () => {
    const mock = new MockLanguageModelV3({
      doStream: { stream: simulateReadableStream<LanguageModelV3StreamPart>({ chunks: [{ type: 'text-delta', id: 't', delta: 'a' }, { type: 'text-delta', id: 't', delta: 'b' }, FINISH] }) },
    });
    const events = [];
    for await (const event of aiSdkModel(mock, { stallTimeoutMs: 20 }).stream(EMPTY_REQUEST, { signal: signal() })) {
      events.push(event);
      // The runtime takes longer with each part than the provider may stay silent.
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    expect(events.map((e) => e.type)).toEqual(['text_delta', 'text_delta', 'response_completed']);
  });
});
