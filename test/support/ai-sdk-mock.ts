import { APICallError, type LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { expect } from 'vitest';
import { ModelCallError, type ModelRequest, type ModelStreamEvent } from '../../src/index.js';

/** Helpers for driving `aiSdkModel` with the AI SDK's own mock model. */

export const FINISH: Extract<LanguageModelV3StreamPart, { type: 'finish' }> = {
  type: 'finish',
  finishReason: { unified: 'stop', raw: 'stop' },
  usage: {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 5, text: 5, reasoning: 0 },
  },
};

export function mockStreaming(...responses: LanguageModelV3StreamPart[][]): MockLanguageModelV3 {
  return new MockLanguageModelV3({ doStream: responses.map((chunks) => ({ stream: simulateReadableStream({ chunks }) })) });
}

export const EMPTY_REQUEST: ModelRequest = { system: [], messages: [{ role: 'user', text: 'hi' }], tools: [], maxOutputTokens: 100 };

export async function collect(events: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

export async function failureOf(events: AsyncIterable<ModelStreamEvent>): Promise<ModelCallError> {
  const error = await collect(events).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelCallError);
  return error as ModelCallError;
}

/** An HTTP error as a provider package reports it. */
export function apiError(statusCode: number, message: string, extra: { responseHeaders?: Record<string, string>; responseBody?: string } = {}): APICallError {
  return new APICallError({ message, url: 'https://api.example/v1/chat/completions', requestBodyValues: {}, statusCode, ...extra });
}
