import { config, map } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, sqliteStorage, type ModelCallOptions, type ModelStreamEvent, type StoredMessage } from '../../../src/index.js';
import { harness, readFileTool, runTurn, withoutWorldStateMessages, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const readCall = (path: string) => ({ name: 'read_file', args: { path } });
const role = (m: unknown) => (m as StoredMessage).message.role;

function streamingModel(events: (signal: AbortSignal) => AsyncIterable<ModelStreamEvent>) {
  return {
    capabilities: { contextWindow: 10_000, maxOutputTokens: 1_000, maxReasoningTokens: 0 },
    stream: (_request: unknown, { signal }: ModelCallOptions) => events(signal),
  };
}

describe('degradation rules (RT-26, 000 §11)', () => {
  it('turn row or user message write fails → no model call, persistence_error; the next turn works', async () => {
    h = await harness([{ text: 'second try answered' }]);
    h.storage.failNext('beginTurn');
    const { outcome } = await runTurn(h.session, 'hi', 'c1');
    expect(outcome).toMatchObject({ status: 'failed', code: 'persistence_error' });
    expect(h.model.requests).toHaveLength(0);
    expect(await h.storage.listMessages(h.session.id)).toEqual([]);
    const again = await runTurn(h.session, 'hi again', 'c2');
    expect(again.outcome).toEqual({ status: 'completed', finalText: 'second try answered' });
  });

  it('assistant message write fails → no tool runs, the turn fails', async () => {
    const log: string[] = [];
    h = await harness([{ text: 'x', toolCalls: [readCall('a')] }], { tools: [readFileTool(log)] });
    h.storage.failWhen('appendMessage', (m) => m.message.role === 'assistant');
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'persistence_error' });
    expect(log).toEqual([]);
    expect(h.updates.some((u) => u.update.type === 'tool_call_started')).toBe(false);
  });

  it('tool result write fails → no next model call, the turn fails', async () => {
    const log: string[] = [];
    h = await harness([{ text: 'x', toolCalls: [readCall('a'), readCall('b')] }, { text: 'never asked' }], { tools: [readFileTool(log)] });
    h.storage.failWhen('appendMessage', (m) => m.message.role === 'tool');
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'persistence_error' });
    expect(h.model.requests).toHaveLength(1);
    expect(log).toEqual(['read_file a']);
  });

  it('a tool-call actor that crashes (a schema that throws) fails the turn, and every call still gets one result (found by the generated paths)', async () => {
    const log: string[] = [];
    const exploding = defineTool({
      name: 'exploding',
      description: 'its schema throws',
      effect: 'read',
      input: z.object({}).refine(() => {
        throw new Error('the schema threw');
      }),
      execute: async () => ({ status: 'succeeded', content: 'never' }),
    });
    h = await harness([{ text: 'x', toolCalls: [{ name: 'exploding', args: {} }, readCall('b')] }, { text: 'never asked' }], {
      tools: [exploding, readFileTool(log)],
    });
    const { outcome } = await runTurn(h.session, 'go');
    // Its own code (issue 10): not a chat-state failure, a failure inside the runtime's tool call.
    expect(outcome).toMatchObject({ status: 'failed', code: 'tool_call_crashed', message: expect.stringContaining('the schema threw') });
    const stored = withoutWorldStateMessages(await h.storage.listMessages(h.session.id));
    const calls = stored.flatMap((m) => (m.message.role === 'assistant' ? m.message.toolCalls.map((c) => c.id) : []));
    const results = stored.flatMap((m) => (m.message.role === 'tool' ? [m.message.toolCallId] : []));
    expect(results).toEqual(calls);
    expect(log).toEqual([]);
    expect(h.model.requests).toHaveLength(1);
  });

  it('a trace recorder whose every write fails leaves the outcome and the conversation unchanged', async () => {
    const steps = () => [{ text: 'x', toolCalls: [readCall('a')] }, { text: 'same answer' }];
    const healthy = await harness(steps());
    const expected = await runTurn(healthy.session, 'go');
    const healthyRoles = (await healthy.storage.listMessages(healthy.session.id)).map((m) => m.message.role);
    await healthy.runtime.flushTrace();
    expect(healthy.runtime.droppedSignals).toBe(0);
    await healthy.runtime.shutdown();

    h = await harness(steps());
    h.storage.failAlways('writeSpans');
    const actual = await runTurn(h.session, 'go');
    expect(actual.outcome).toEqual(expected.outcome);
    expect((await h.storage.listMessages(h.session.id)).map((m) => m.message.role)).toEqual(healthyRoles);
    await h.runtime.flushTrace();
    expect(h.runtime.droppedSignals).toBeGreaterThanOrEqual(6);
    expect(await h.storage.listSpans(h.session.id)).toEqual([]);
  });

  it('a full trace queue drops signals and counts them; the loop never waits for it', async () => {
    const steps = Array.from({ length: 4 }, (_, i) => ({ text: `${i}`, toolCalls: [readCall(`f${i}`)] }));
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // A decorator around the real storage whose span writes hang until the gate opens.
    const real = sqliteStorage({ filename: ':memory:' });
    const stalled = new Proxy(real, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        if (name !== 'writeSpans' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: unknown[]) => {
          await gate;
          return (value as (...a: unknown[]) => Promise<void>).apply(target, args);
        };
      },
    });
    h = await harness([...steps, { text: 'done' }], { storage: stalled, traceQueueCapacity: 2 });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });
    // 1 turn + 5 model + 4 tool spans, each started and ended: 20 signals; one batch is stuck in the
    // gated write and the queue holds 2, so at least 16 were dropped while the turn ran on.
    const droppedWhileStuck = h.runtime.droppedSignals;
    expect(droppedWhileStuck).toBeGreaterThanOrEqual(16);
    open();
    await h.runtime.flushTrace();
    expect(h.runtime.droppedSignals).toBeGreaterThanOrEqual(droppedWhileStuck);
    expect(h.runtime.droppedSignals).toBeLessThanOrEqual(20);
  });

  it('a subscriber that throws or unsubscribes mid-turn does not change the outcome, with RxJS at its defaults', async () => {
    // No `config.onUnhandledError` here: by default RxJS rethrows a subscriber's exception on a later
    // tick, which ends the process (vitest fails the run on such an error). The runtime reports it instead.
    expect(config.onUnhandledError).toBeNull();
    const warnings: string[] = [];
    h = await harness([{ text: 'x', toolCalls: [readCall('a')] }, { text: 'finished anyway' }], { warn: (message) => warnings.push(message) });
    const sub = h.session.updates$.subscribe((u) => {
      if (u.update.type === 'tool_call_started') sub.unsubscribe();
    });
    let thrown = 0;
    h.session.updates$.subscribe((u) => {
      if (u.update.type === 'text_delta' && thrown === 0) {
        thrown += 1;
        throw new Error('subscriber bug');
      }
    });
    // Through an operator chain too, and on the runtime-wide stream.
    h.session.updates$.pipe(map((u) => u.sequence)).subscribe((sequence) => {
      if (sequence === 3) throw new Error('piped subscriber bug');
    });
    h.runtime.updates$.subscribe((u) => {
      if (u.update.type === 'turn_finished') throw new Error('runtime subscriber bug');
    });
    const after: number[] = [];
    h.session.updates$.subscribe((u) => after.push(u.sequence));
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'finished anyway' });
    expect(sub.closed).toBe(true);
    // The snapshot is still readable and terminal.
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'terminal', outcome: { status: 'completed' } });
    // The harness's own subscriber, and one subscribed after the throwing ones, still saw a gap-free stream.
    expect(h.updates.map((u) => u.sequence)).toEqual(h.updates.map((_, i) => i + 1));
    expect(after).toEqual(h.updates.map((u) => u.sequence));
    expect(warnings.filter((w) => w.includes('threw')).map((w) => w.replace(/.*threw: /, '')).sort()).toEqual([
      'piped subscriber bug',
      'runtime subscriber bug',
      'subscriber bug',
    ]);
  });

  it('a model stream that breaks discards the draft and fails model_error', async () => {
    h = await harness([], {
      model: streamingModel(async function* () {
        yield { type: 'text_delta', text: 'half a sent' };
        throw new Error('connection reset');
      }),
    });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'model_error', message: 'connection reset' });
    const kinds = h.updates.map((u) => u.update.type);
    expect(kinds.slice(kinds.indexOf('text_delta'))).toEqual(['text_delta', 'draft_cleared', 'phase_changed', 'turn_finished']);
    expect(withoutWorldStateMessages(await h.storage.listMessages(h.session.id)).map(role)).toEqual(['user']);
  });

  it('a stream without a completed response, or with two, is a model_protocol_error and runs no tool', async () => {
    const log: string[] = [];
    h = await harness([], {
      tools: [readFileTool(log)],
      model: streamingModel(async function* () {
        yield { type: 'text_delta', text: 'no end' };
      }),
    });
    expect((await runTurn(h.session, 'a')).outcome).toMatchObject({ status: 'failed', code: 'model_protocol_error' });
    await h.runtime.shutdown();

    const twice: ModelStreamEvent = {
      type: 'response_completed',
      response: { text: 't', reasoning: '', toolCalls: [{ id: 'x', name: 'read_file', argumentsText: '{"path":"p"}' }] },
    };
    h = await harness([], {
      tools: [readFileTool(log)],
      model: streamingModel(async function* () {
        yield twice;
        yield twice;
      }),
    });
    expect((await runTurn(h.session, 'b')).outcome).toMatchObject({ status: 'failed', code: 'model_protocol_error' });
    expect(log).toEqual([]);
  });

  it('a provider error is model_error and the scripted error kinds map to their codes', async () => {
    h = await harness([{ error: 'provider' }, { error: 'protocol' }, { error: 'overflow', afterText: 'some text' }]);
    expect((await runTurn(h.session, 'a')).outcome).toMatchObject({ status: 'failed', code: 'model_error' });
    expect((await runTurn(h.session, 'b')).outcome).toMatchObject({ status: 'failed', code: 'model_protocol_error' });
    expect((await runTurn(h.session, 'c')).outcome).toMatchObject({ status: 'failed', code: 'model_error' });
  });

  it('a terminal status that could not be written is written before the next turn starts', async () => {
    h = await harness([{ text: 'one' }, { text: 'two' }]);
    h.storage.failNext('endTurn');
    const first = await runTurn(h.session, 'a');
    expect(first.outcome).toEqual({ status: 'completed', finalText: 'one' });
    expect((await h.storage.getTurn(first.turnId))?.status).toBe('running');
    const second = await runTurn(h.session, 'b');
    expect(second.outcome).toEqual({ status: 'completed', finalText: 'two' });
    expect((await h.storage.getTurn(first.turnId))?.status).toBe('completed');
  });
});
