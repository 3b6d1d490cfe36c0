import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, sqliteStorage, type ModelPort, type SessionHandle, type SessionStorage } from '../../../src/index.js';

/** Two `read` calls, then the answer; it decides from the tool results in the request, so it serves every session at once. */
const model: ModelPort = {
  capabilities: { contextWindow: 128_000, maxOutputTokens: 8_192, maxReasoningTokens: 0 },
  async *stream(request) {
    const results = request.messages.filter((m) => m.role === 'tool').length;
    if (results >= 2) {
      yield { type: 'text_delta', text: 'done' };
      yield { type: 'response_completed', response: { text: 'done', reasoning: '', toolCalls: [] } };
      return;
    }
    const call = { id: `call_${results}`, name: 'read', argumentsText: JSON.stringify({ path: `f${results}` }) };
    yield { type: 'response_completed', response: { text: '', reasoning: '', toolCalls: [call] } };
  },
};

const read = defineTool({
  name: 'read',
  description: 'read a file',
  effect: 'read',
  input: z.object({ path: z.string() }),
  execute: async ({ path }) => ({ status: 'succeeded', content: `contents of ${path}` }),
});

/**
 * The storage with span batches held back until `release()`: the burst meets a queue that nothing
 * drains yet, as it does when the database is slower than the sessions, whatever this machine's speed.
 */
function holdingSpans(inner: SessionStorage) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const storage: SessionStorage = {
    ...inner,
    writeSpans: async (writes) => {
      await released;
      return inner.writeSpans(writes);
    },
  };
  return { storage, release };
}

/** `count` sessions each start a turn in the same tick; resolves with what the trace queue dropped and how many spans were stored. */
async function burst(count: number, traceQueueCapacity?: number) {
  const { storage, release } = holdingSpans(sqliteStorage({ filename: ':memory:' }));
  const runtime = await createRuntime({ storage, model, tools: [read], ...(traceQueueCapacity !== undefined && { traceQueueCapacity }) });
  const sessions: SessionHandle[] = [];
  for (let i = 0; i < count; i++) sessions.push(await runtime.createSession({ agent: 'default', permissionMode: 'auto' }));
  const turns = await Promise.all(sessions.map((s, i) => s.startTurn({ clientRequestId: `c${i}`, input: [{ type: 'text', text: 'go' }] })));
  const outcomes = await Promise.all(turns.map((t, i) => (t.ok ? sessions[i]!.waitForTurn(t.turnId) : Promise.reject(new Error('refused')))));
  release();
  await runtime.flushTrace();
  let spans = 0;
  for (const session of sessions) spans += (await storage.listSpans(session.id)).length;
  const dropped = runtime.droppedSignals;
  await runtime.shutdown();
  return { completed: outcomes.filter((o) => o.status === 'completed').length, dropped, spans };
}

describe('the trace queue under a burst of sessions (RT-26)', () => {
  it('keeps every signal when 500 sessions start their turns at once, where a fixed bound of 1 024 drops some', async () => {
    const fixed = await burst(500, 1_024);
    expect(fixed.completed).toBe(500);
    expect(fixed.dropped).toBeGreaterThan(0);

    const grown = await burst(500);
    expect(grown.completed).toBe(500);
    expect(grown.dropped).toBe(0);
    // Every span of every turn is stored, and more than the fixed bound kept.
    expect(grown.spans).toBeGreaterThan(fixed.spans);
    expect(grown.spans % 500).toBe(0);
  });
});
