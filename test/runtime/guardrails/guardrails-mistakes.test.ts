import { afterEach, describe, expect, it } from 'vitest';
import type { MistakeLimitContext, MistakeLimitDecision, ScriptedStep, StoredMessage } from '../../../src/index.js';
import { mistakeLimitStopMessage } from '../../../machines/guardrails.js';
import { failingTool, harness, readFileTool, runTurn, startTurn, writeFileTool, type Harness } from '../../support/harness.js';

/** GR-2 through the public API: the consecutive-mistake breaker and `onMistakeLimit`. */

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const flaky = (id?: string) => ({ name: 'flaky', args: {}, ...(id && { id }) });
const read = (path: string) => ({ name: 'read_file', args: { path } });
const tools = [readFileTool(), failingTool(), writeFileTool()];

/** Model steps whose calls are the given ones, then `done`. */
const steps = (...calls: Array<Array<{ name: string; args?: unknown; id?: string }>>): ScriptedStep[] => [
  ...calls.map((toolCalls, i) => ({ text: `step ${i + 1}`, toolCalls })),
  { text: 'done' },
];

async function stored(hh: Harness): Promise<StoredMessage[]> {
  return hh.storage.listMessages(hh.session.id);
}

describe('the mistake breaker (GR-2)', () => {
  it('without onMistakeLimit the turn completes with an explanatory stop message when the limit is reached; the model is not called again', async () => {
    h = await harness(steps([flaky()], [{ name: 'no_such_tool', args: {} }], [read('a')]), { tools, agents: { default: { guardrails: { mistakeLimit: 2 } } } });
    const { turnId, outcome } = await runTurn(h.session, 'go');
    // Seed 003: with no callback the breaker stops the run with a message saying why, naming the last errors.
    const message = mistakeLimitStopMessage(2, ["ToolNotFound: no tool named 'no_such_tool' is available"]);
    expect(message).toContain('2 steps in a row in which every tool call failed');
    expect(outcome).toEqual({ status: 'completed', finalText: message, stoppedBy: 'mistake_limit' });
    expect(h.model.requests).toHaveLength(2);
    expect(h.updates.flatMap((u) => (u.update.type === 'guardrail_triggered' ? [u.update] : []))).toEqual([
      { type: 'guardrail_triggered', rule: 'mistake_limit', level: 'hard', count: 2 },
    ]);
    // The message is the turn's stored answer, and the stored turn says what stopped it.
    expect((await stored(h)).at(-1)?.message).toMatchObject({ role: 'assistant', text: message, toolCalls: [] });
    expect(await h.storage.getTurn(turnId)).toMatchObject({ status: 'completed', errorCode: 'mistake_limit', finalText: message });
  });

  it('a step with one success is no mistake, and any success resets the count', async () => {
    h = await harness(steps([flaky(), read('a')], [flaky()], [read('b')], [flaky()], [read('c')]), { tools, agents: { default: { guardrails: { mistakeLimit: 2 } } } });
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'completed', finalText: 'done' });
  });

  it("trips at six by default, and 'cline' at six too; rule denials count as failures", async () => {
    const denied = (i: number) => ({ name: 'write_file', args: { path: `x${i}`, text: 'y' } });
    for (const guardrails of [undefined, 'cline' as const]) {
      h = await harness(steps(...Array.from({ length: 6 }, (_, i) => [denied(i)])), { tools, permissionMode: 'read_only', agents: { default: guardrails ? { guardrails } : {} } });
      const { outcome } = await runTurn(h.session, 'go');
      expect(outcome).toMatchObject({ status: 'completed', stoppedBy: 'mistake_limit', finalText: expect.stringContaining('6 steps in a row') });
      expect(h.model.requests).toHaveLength(6);
      await h.runtime.shutdown();
    }
  });

  it('mistakeLimit: null switches the breaker off', async () => {
    // Unknown tools: each call fails, and none counts toward a loop.
    h = await harness(steps(...Array.from({ length: 7 }, () => [{ name: 'no_such_tool', args: {} }])), { tools, agents: { default: { guardrails: { mistakeLimit: null } } } });
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(h.model.requests).toHaveLength(8);
  });

  it("onMistakeLimit's `continue` writes its guidance as a user-side note before the next model call and resets the count", async () => {
    const asked: Array<Omit<MistakeLimitContext, 'signal'>> = [];
    const onMistakeLimit = ({ signal: _signal, ...context }: MistakeLimitContext): MistakeLimitDecision => {
      asked.push(context);
      return { action: 'continue', guidance: 'Stop calling flaky; read the file instead.' };
    };
    // An unknown tool between the flaky calls keeps them from being a loop of identical calls.
    h = await harness(steps([flaky('f1'), { name: 'no_such_tool', args: {}, id: 'f2' }], [flaky('f3')], [read('a')]), { tools, agents: { default: { guardrails: { mistakeLimit: 2 }, onMistakeLimit } } });
    const { turnId, outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(asked).toEqual([{ sessionId: h.session.id, turnId, count: 2, lastErrors: ['tool error: disk on fire'] }]);
    const note = (await stored(h)).find((m) => m.message.role === 'user' && m.message.kind === 'guardrail_note');
    expect(note?.message).toMatchObject({ text: 'Stop calling flaky; read the file instead.' });
    // The third request ends with the note, right after the failed result.
    const third = h.model.requests[2]!.messages;
    expect(third.at(-1)).toEqual({ role: 'user', text: 'Stop calling flaky; read the file instead.' });
    expect(third.at(-2)).toMatchObject({ role: 'tool', toolCallId: 'f3' });
  });

  it("onMistakeLimit's `stop` completes the turn with its message as the final text, stored, with stoppedBy", async () => {
    const onMistakeLimit = async (): Promise<MistakeLimitDecision> => ({ action: 'stop', message: 'I keep failing to read the disk; please check it.' });
    h = await harness(steps([flaky()], [read('never')]), { tools, agents: { default: { guardrails: { mistakeLimit: 1 }, onMistakeLimit } } });
    const { turnId, outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'I keep failing to read the disk; please check it.', stoppedBy: 'mistake_limit' });
    expect(h.model.requests).toHaveLength(1);
    expect((await stored(h)).at(-1)?.message).toMatchObject({ role: 'assistant', text: 'I keep failing to read the disk; please check it.', toolCalls: [] });
    // Read back from storage, the outcome still says what stopped it.
    expect(await h.storage.getTurn(turnId)).toMatchObject({ status: 'completed', errorCode: 'mistake_limit' });
    const reopened = await h.runtime.openSession(h.session.id);
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'I keep failing to read the disk; please check it.', stoppedBy: 'mistake_limit' });
  });

  it('a callback that throws, or answers something else, fails closed: mistake_limit with the reason', async () => {
    const throwing = () => {
      throw new Error('the operator console is down');
    };
    h = await harness(steps([flaky()]), { tools, agents: { default: { guardrails: { mistakeLimit: 1 }, onMistakeLimit: throwing } } });
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({
      status: 'failed',
      code: 'mistake_limit',
      message: expect.stringContaining('onMistakeLimit failed: the operator console is down'),
    });
    await h.runtime.shutdown();
    const nonsense = async () => ({ action: 'retry' }) as never;
    h = await harness(steps([flaky()]), { tools, agents: { default: { guardrails: { mistakeLimit: 1 }, onMistakeLimit: nonsense } } });
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'failed', code: 'mistake_limit', message: expect.stringContaining('answered neither') });
  });

  it('a late stop still reaches the running turn while the callback decides: actor_stopped, its signal aborted (GR-3)', async () => {
    let seen: AbortSignal | null = null;
    let reached!: () => void;
    const asked = new Promise<void>((resolve) => (reached = resolve));
    const onMistakeLimit = ({ signal }: MistakeLimitContext) => {
      seen = signal;
      reached();
      return new Promise<MistakeLimitDecision>(() => undefined);
    };
    h = await harness(steps([flaky()]), { tools, agents: { default: { guardrails: { mistakeLimit: 1 }, onMistakeLimit } } });
    const turnId = await startTurn(h.session, 'go');
    await asked;
    await h.session.stop();
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'actor_stopped' });
    expect(seen!.aborted).toBe(true);
    const finished = h.updates.findIndex((u) => u.update.type === 'turn_finished');
    expect(finished).toBe(h.updates.length - 1);
  });

  it('a cancel reaches a callback still deciding: its signal aborts and the turn ends cancelled at once', async () => {
    let seen: AbortSignal | null = null;
    let reached!: () => void;
    const asked = new Promise<void>((resolve) => (reached = resolve));
    const onMistakeLimit = ({ signal }: MistakeLimitContext) => {
      seen = signal;
      reached();
      return new Promise<MistakeLimitDecision>(() => undefined); // never answers
    };
    h = await harness(steps([flaky()]), { tools, agents: { default: { guardrails: { mistakeLimit: 1 }, onMistakeLimit } } });
    const turnId = await startTurn(h.session, 'go');
    await asked;
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running' });
    await h.session.cancelTurn(turnId);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'cancelled' });
    expect(seen!.aborted).toBe(true);
    // Nothing was written for the decision that never came.
    expect((await stored(h)).some((m) => m.message.role === 'user' && m.message.kind === 'guardrail_note')).toBe(false);
  });
});
