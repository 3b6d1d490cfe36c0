import { afterEach, describe, expect, it } from 'vitest';
import type { ScriptedStep, StoredMessage, UpdateEnvelope } from '../../../src/index.js';
import { harness, runTurn, type Harness } from '../../support/harness.js';

/** GR-1 through the public API: loop counts, the soft hint, the hard stop, cycles, near-duplicates. */

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const read = (path: unknown, id?: string) => ({ name: 'read_file', args: { path }, ...(id && { id }) });
/** One model step per call, then a final answer. */
const oneCallPerStep = (calls: ReturnType<typeof read>[] | { name: string; args?: unknown; argumentsText?: string; id?: string }[]): ScriptedStep[] => [
  ...calls.map((call, i) => ({ text: `step ${i + 1}`, toolCalls: [call] })),
  { text: 'done' },
];

async function toolResults(hh: Harness): Promise<Array<{ id: string; status: string; content: string }>> {
  const stored: StoredMessage[] = await hh.storage.listMessages(hh.session.id);
  return stored.flatMap(({ message: m }) => (m.role === 'tool' ? [{ id: m.toolCallId, status: m.status, content: m.content }] : []));
}

function guardrailUpdates(updates: UpdateEnvelope[]) {
  return updates.flatMap((u) => (u.update.type === 'guardrail_triggered' ? [u.update] : []));
}

describe('loop detection over consecutive calls (GR-1)', () => {
  it('a call with an unknown tool between identical calls breaks the run: A, unknown, A, A completes under the default profile', async () => {
    h = await harness(oneCallPerStep([read('a.txt', 'a1'), { name: 'no_such_tool', args: {}, id: 'u' }, read('a.txt', 'a2'), read('a.txt', 'a3')]));
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect((await toolResults(h)).map((r) => [r.id, r.status])).toEqual([
      ['a1', 'succeeded'],
      ['u', 'failed'],
      ['a2', 'succeeded'],
      ['a3', 'succeeded'],
    ]);
  });

  it('so does a call whose arguments fail the schema or are no JSON object', async () => {
    h = await harness(
      oneCallPerStep([
        read('a.txt'),
        read(7), // the schema wants a string
        read('a.txt'),
        { name: 'read_file', argumentsText: '[1]' },
        read('a.txt'),
        read('a.txt'),
      ]),
    );
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'completed' });
  });

  it('the default profile still fails doom_loop at the third identical call in a row, which never runs', async () => {
    h = await harness(oneCallPerStep([read('a.txt', 'x1'), read('a.txt', 'x2'), read('a.txt', 'x3')]));
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'doom_loop', message: "'read_file' was called 3 times in a row with the same arguments" });
    expect((await toolResults(h)).at(-1)).toEqual({ id: 'x3', status: 'failed', content: "doom loop detected for tool 'read_file'" });
    expect(guardrailUpdates(h.updates)).toEqual([{ type: 'guardrail_triggered', rule: 'loop', level: 'hard', toolName: 'read_file', count: 3 }]);
  });

  it("'cline' hints at the third identical call (which still runs), says so in an update, and stops at the fifth", async () => {
    const ids = ['c1', 'c2', 'c3', 'c4', 'c5'];
    h = await harness(oneCallPerStep(ids.map((id) => read('a.txt', id))), { agents: { default: { guardrails: 'cline' } } });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'doom_loop', message: "'read_file' was called 5 times in a row with the same arguments" });
    const results = await toolResults(h);
    expect(results.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', 'failed']);
    expect(results[2]!.content).toBe(
      "contents of a.txt\n\n[guardrail] This is call 3 in a row of 'read_file' with the same arguments; repeating it will not give a different result. Try another approach or other arguments, or answer with what you have.",
    );
    // Only the third carries the hint; the model saw it in its next request.
    expect(results.filter((r) => r.content.includes('[guardrail]')).map((r) => r.id)).toEqual(['c3']);
    expect(h.model.requests[3]!.messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'c3', content: results[2]!.content });
    expect(guardrailUpdates(h.updates)).toEqual([
      { type: 'guardrail_triggered', rule: 'loop', level: 'soft', toolName: 'read_file', count: 3 },
      { type: 'guardrail_triggered', rule: 'loop', level: 'hard', toolName: 'read_file', count: 5 },
    ]);
    // The update comes after the call started and before it finished.
    const order = h.updates.filter((u) => u.update.type !== 'text_delta').map((u) => (u.update.type === 'tool_call_started' || u.update.type === 'tool_call_finished' ? `${u.update.type}:${u.update.toolCallId}` : u.update.type));
    expect(order.indexOf('guardrail_triggered')).toBe(order.indexOf('tool_call_started:c3') + 1);
  });

  it('every threshold can be overridden: a hint at 2, a stop at 4', async () => {
    h = await harness(oneCallPerStep(['1', '2', '3', '4'].map((n) => read('a.txt', `o${n}`))), {
      agents: { default: { guardrails: { profile: 'cline', loop: { soft: 2, hard: 4 } } } },
    });
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
    expect(guardrailUpdates(h.updates).map((u) => `${u.level}:${u.count}`)).toEqual(['soft:2', 'hard:4']);
  });

  it('a different call resets the count: A, A, B, A, A completes under the default profile', async () => {
    h = await harness(oneCallPerStep([read('a'), read('a'), read('b'), read('a'), read('a')]));
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'completed' });
  });

  it('counts calls of one response in provider order, across responses', async () => {
    h = await harness([{ text: 'two', toolCalls: [read('a', 'p1'), read('a', 'p2')] }, { text: 'one more', toolCalls: [read('a', 'p3')] }, { text: 'done' }]);
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
  });
});

describe('opt-in rules (issue 12): cycles and near-duplicate arguments', () => {
  it('cycle detection hints at two repetitions of A,B and stops at three', async () => {
    const calls = ['a', 'b', 'a', 'b', 'a', 'b'].map((p, i) => read(p, `k${i + 1}`));
    h = await harness(oneCallPerStep(calls), { agents: { default: { guardrails: { cycles: true } } } });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'doom_loop', message: "the same sequence of 2 tool calls was repeated 3 times in a row (last: 'read_file')" });
    const results = await toolResults(h);
    expect(results.filter((r) => r.content.includes('[guardrail]')).map((r) => r.id)).toEqual(['k4']);
    expect(results[3]!.content).toContain('The last 4 tool calls repeat the same sequence of 2 calls 2 times.');
    expect(results.at(-1)).toMatchObject({ id: 'k6', status: 'failed', content: 'doom loop detected: a sequence of 2 tool calls repeated 3 times' });
    expect(guardrailUpdates(h.updates)).toEqual([
      { type: 'guardrail_triggered', rule: 'cycle', level: 'soft', toolName: 'read_file', count: 2 },
      { type: 'guardrail_triggered', rule: 'cycle', level: 'hard', toolName: 'read_file', count: 3 },
    ]);
  });

  it('finds a period of three, and leaves cycles alone when the rule is off', async () => {
    const abc = ['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c'].map((p) => read(p));
    h = await harness(oneCallPerStep(abc), { agents: { default: { maxModelCalls: 20, guardrails: { cycles: { soft: null, hard: 3 } } } } });
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'failed', code: 'doom_loop', message: expect.stringContaining('sequence of 3 tool calls') });
    await h.runtime.shutdown();
    h = await harness(oneCallPerStep(abc));
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'completed' });
  });

  it('near-duplicates: whitespace and number formatting do not hide a loop when the rule is on', async () => {
    const variants = [read('  a.txt'), read('a.txt '), read('a.txt\n')];
    h = await harness(oneCallPerStep(variants), { agents: { default: { guardrails: { nearDuplicates: true } } } });
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
    await h.runtime.shutdown();
    // Off (the default), they are three different calls.
    h = await harness(oneCallPerStep(variants));
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'completed' });
  });

  it('near-duplicates: numeric strings and key order', async () => {
    const model = [
      { name: 'read_file', argumentsText: '{"path":"1.50","extra":{"b":1,"a":2}}' },
      { name: 'read_file', argumentsText: '{"extra":{"a":2,"b":1.0},"path":"1.5"}' },
      { name: 'read_file', argumentsText: '{"path":" 1.5 ","extra":{"b":1,"a":2.00}}' },
    ];
    h = await harness(oneCallPerStep(model), { agents: { default: { guardrails: { nearDuplicates: true } } } });
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
  });
});

describe('guardrail configuration is validated at createRuntime', () => {
  it('refuses unknown profiles, unknown fields, and a hint that does not come before its stop', async () => {
    const bad = [{ guardrails: 'strict' }, { guardrails: { loop: { soft: 5, hard: 5 } } }, { guardrails: { looop: {} } }, { guardrails: { cycles: { soft: 4, hard: 3 } } }, { onMistakeLimit: 'stop' }, { guardrails: 'cline', doomLoopThreshold: 3 }];
    for (const agent of bad) {
      await expect(harness([], { agents: { default: agent as never } })).rejects.toMatchObject({ code: 'InvalidOptions' });
    }
  });
});
