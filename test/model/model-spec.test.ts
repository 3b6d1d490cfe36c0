import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelFromSpec } from '../../src/model/model-spec.js';
import { TurnchartError, type ModelStreamEvent } from '../../src/index.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-model-spec-');

describe("a host's --model", () => {
  it('builds an OpenAI-compatible model with the capabilities given, defaults for the rest', async () => {
    const choice = await modelFromSpec('openai-compatible:http://127.0.0.1:11434/v1#llama3.1', { capabilities: { contextWindow: 8_192 } });
    expect(choice.description).toBe('llama3.1 at http://127.0.0.1:11434/v1 (OpenAI-compatible)');
    expect(choice.model.capabilities).toEqual({ contextWindow: 8_192, maxOutputTokens: 8_192, maxReasoningTokens: 0 });
    // A model id may itself contain colons and slashes; the last # separates it.
    expect((await modelFromSpec('openai-compatible:https://host:8000/v1#org/model:q4')).description).toBe('org/model:q4 at https://host:8000/v1 (OpenAI-compatible)');
  });

  it.each(['openai-compatible:http://127.0.0.1:1/v1', 'openai-compatible:http://127.0.0.1:1/v1#', 'openai-compatible:ftp://x/v1#m', 'openai-compatible:nonsense#m'])(
    'refuses %s',
    async (spec) => {
      const error = await modelFromSpec(spec).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TurnchartError);
      expect((error as TurnchartError).message).toMatch(/expected openai-compatible:BASE_URL#MODEL/);
    },
  );

  it('lets a scripted reply report usage and name its tool-call id', async () => {
    const file = path.join(await tempDir(), 'script.json');
    await writeFile(file, JSON.stringify([{ text: 'hi', toolCalls: [{ name: 'noop', id: 'call_0' }], usage: { inputTokens: 7, outputTokens: 2 } }]));
    const { model } = await modelFromSpec(`scripted:${file}`);
    const events: ModelStreamEvent[] = [];
    for await (const event of model.stream({ system: [], messages: [], tools: [], maxOutputTokens: 10 }, { signal: new AbortController().signal })) events.push(event);
    expect(events.at(-1)).toEqual({
      type: 'response_completed',
      response: { text: 'hi', reasoning: '', toolCalls: [{ id: 'call_0', name: 'noop', argumentsText: '{}' }] },
      usage: { inputTokens: 7, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0 },
    });
  });
});
