import fc from 'fast-check';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool, TurnchartError, type Runtime, type SessionHandle } from '../../src/index.js';
import { harness, runTurn, type Harness } from '../support/harness.js';

/**
 * Issue 4, item 5: every public command fed malformed, oversized and wrong-typed values answers
 * with a typed result, leaves the session working and the database unchanged.
 */

const SEED = 20261129;
const RUNS = 150;

/** Values no schema expects: prototype keys, lone surrogates, deep nesting, wrong types. */
const hostile = fc.oneof(
  fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true }),
  fc.string({ unit: 'binary' }),
  fc.constant(JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}') as unknown),
  fc.constant({ clientRequestId: 'c', input: [{ type: 'text', text: 'x', __proto__: { type: 'skill' } }] }),
  fc.constant(deep(5_000)),
  fc.record({ clientRequestId: fc.string({ unit: 'binary' }), input: fc.array(fc.anything(), { maxLength: 3 }) }),
  fc.record({ turnId: fc.anything(), toolCallId: fc.anything(), decision: fc.anything() }),
);

function deep(levels: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? { next: value } : [value];
  return value;
}

const payloadTool = defineTool({
  name: 'store_payload',
  description: 'accepts any payload',
  effect: 'read',
  input: z.object({ payload: z.unknown() }),
  execute: async () => ({ status: 'succeeded', content: 'stored' }),
});

let h: Harness;
let session: SessionHandle;
let runtime: Runtime;

beforeAll(async () => {
  h = await harness([], { permissionMode: 'auto', tools: [payloadTool] });
  ({ session, runtime } = h);
});
afterAll(async () => {
  await runtime.shutdown();
});

async function databaseState() {
  return JSON.stringify([await h.storage.listTurns(session.id), await h.storage.listMessages(session.id)]);
}

function isTypedError(result: unknown): boolean {
  const r = result as { ok?: unknown; error?: { code?: unknown } };
  return r.ok === false && typeof r.error?.code === 'string';
}

describe('hostile input to every command', () => {
  it('answers typed errors, changes nothing stored, and the session still runs a turn', async () => {
    const before = await databaseState();
    const commands: ((value: unknown) => Promise<unknown> | unknown)[] = [
      (v) => session.startTurn(v),
      (v) => session.cancelTurn(v),
      (v) => session.resolvePermission(v),
      (v) => session.deliverAgentMessage(v),
      (v) => session.setPermissionMode(v),
      (v) => session.replayUpdates(v),
      (v) => session.rewindConversation(v),
    ];
    await fc.assert(
      fc.asyncProperty(hostile, fc.nat(commands.length - 1), async (value, which) => {
        const result = await commands[which]!(value);
        // Whatever the value, the answer is a value: ok, or a typed error.
        expect((result as { ok?: unknown }).ok === true || isTypedError(result)).toBe(true);
        // Nothing hostile may be accepted as a turn or a message.
        expect((result as { ok?: unknown }).ok === true && which === 0).toBe(false);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    // Agent messages that were valid by chance would sit in the mailbox; none of them reach storage before a turn.
    expect(await databaseState()).toBe(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses 10 MB strings everywhere with a typed error', async () => {
    const huge = 'x'.repeat(10 * 1024 * 1024);
    const before = await databaseState();
    expect(isTypedError(await session.startTurn({ clientRequestId: 'c-huge', input: [{ type: 'text', text: huge }] }))).toBe(true);
    expect(isTypedError(await session.startTurn({ clientRequestId: huge, input: [{ type: 'text', text: 'hi' }] }))).toBe(true);
    expect(isTypedError(await session.deliverAgentMessage({ from: 'w', text: huge }))).toBe(true);
    expect(isTypedError(await session.cancelTurn(huge))).toBe(true);
    expect(isTypedError(await session.resolvePermission({ turnId: huge, toolCallId: 'x', decision: 'deny' }))).toBe(true);
    expect(await databaseState()).toBe(before);
  });

  it('answers runtime-level calls with TurnchartError, never a crash', async () => {
    await fc.assert(
      fc.asyncProperty(hostile, async (value) => {
        // Options are stripped to what the schema knows, so some hostile values are valid options.
        const created = await runtime.createSession(value as never).then(
          (handle) => handle.snapshot().runtime.kind === 'idle',
          (error: unknown) => error instanceof TurnchartError,
        );
        expect(created).toBe(true);
        await expect(runtime.openSession(value as never)).rejects.toBeInstanceOf(TurnchartError);
        await expect(runtime.inspectContextWindow(value as never)).rejects.toBeInstanceOf(TurnchartError);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });

  it('still runs a normal turn afterwards', async () => {
    const ok = await harness([{ text: 'still alive' }]);
    expect((await runTurn(ok.session, 'hello')).outcome).toEqual({ status: 'completed', finalText: 'still alive' });
    await ok.runtime.shutdown();
  });
});

describe('hostile tool arguments from the model', () => {
  it('every call gets exactly one stored result, and the turn completes', async () => {
    const argument = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.json({ maxDepth: 6 }),
      fc.constant('{"payload": {"__proto__": {"polluted": true}}}'),
      fc.constant(JSON.stringify({ payload: deep(3_000) })),
      fc.constant(`{"payload":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_001)}`),
      fc.constant('['.repeat(100_000)),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(argument, { minLength: 1, maxLength: 3 }), async (texts) => {
        const calls = texts.map((argumentsText, i) => ({ id: `c${i}`, name: 'store_payload', argumentsText }));
        const run = await harness([{ text: 'calling', toolCalls: calls }, { text: 'done' }], { permissionMode: 'auto', tools: [payloadTool] });
        try {
          const { outcome } = await runTurn(run.session, 'go');
          expect(['completed', 'failed']).toContain(outcome.status);
          const results = (await run.storage.listMessages(run.session.id)).filter((m) => m.message.role === 'tool');
          expect(results.map((m) => (m.message.role === 'tool' ? m.message.toolCallId : ''))).toEqual(calls.map((c) => c.id));
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        } finally {
          await run.runtime.shutdown();
        }
      }),
      { seed: SEED, numRuns: 40 },
    );
  });
});
