import { afterEach, describe, expect, it } from 'vitest';
import { CONCLUDE_INSTRUCTION, type StoredMessage } from '../../../src/index.js';
import { harness, runTurn, type Harness } from '../../support/harness.js';

/**
 * The token budget per turn (issue 12): from the usage the model port reports. When the next call
 * would pass `maxTurnTokens`, one last call goes out without tools and with an instruction to
 * conclude; its answer completes the turn (`stoppedBy: 'token_budget'`), a call for tools instead
 * ends it `budget_exhausted`.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const BUDGET = 5_000;
const budgeted = { default: { guardrails: { maxTurnTokens: BUDGET } } };
const read = (path: string, id?: string) => ({ name: 'read_file', args: { path }, ...(id && { id }) });

describe('the token budget of a turn', () => {
  it('makes one last call without tools, told to conclude, and completes with stoppedBy token_budget', async () => {
    h = await harness(
      [
        { text: 'reading', toolCalls: [read('a')], usage: { inputTokens: 2_000, outputTokens: 100 } },
        { text: 'reading more', toolCalls: [read('b')], usage: { inputTokens: 2_800, outputTokens: 100 } },
        { text: 'Here is what I found so far.', usage: { inputTokens: 3_000, outputTokens: 50 } },
      ],
      { agents: budgeted },
    );
    const { turnId, outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'Here is what I found so far.', stoppedBy: 'token_budget' });
    const [first, second, last] = h.model.requests;
    expect(first!.tools.map((t) => t.name)).toEqual(['read_file', 'update_plan']);
    expect(second!.tools).not.toEqual([]);
    // 5 000 reported after two calls: the third is the last, without tools and with the instruction.
    expect(last!.tools).toEqual([]);
    expect(last!.system.at(-1)).toEqual({ key: 'core/token-budget', content: CONCLUDE_INSTRUCTION });
    expect(h.updates.flatMap((u) => (u.update.type === 'guardrail_triggered' ? [u.update] : []))).toEqual([
      { type: 'guardrail_triggered', rule: 'token_budget', level: 'soft', count: 5_000 },
    ]);
    expect(await h.storage.getTurn(turnId)).toMatchObject({ status: 'completed', errorCode: 'token_budget' });
  });

  it('ends budget_exhausted when the last call still asks for tools; none runs, each gets its result', async () => {
    const log: string[] = [];
    h = await harness(
      [
        { text: 'reading', toolCalls: [read('a')], usage: { inputTokens: 4_900, outputTokens: 200 } },
        { text: 'one more read', toolCalls: [read('b', 'late-1'), read('c', 'late-2')] },
      ],
      { agents: budgeted },
    );
    h.runtime.updates$.subscribe((u) => {
      if (u.update.type === 'tool_call_started') log.push(u.update.toolCallId);
    });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'budget_exhausted', message: expect.stringContaining(`token budget of ${BUDGET}`) });
    const stored: StoredMessage[] = await h.storage.listMessages(h.session.id);
    const results = stored.flatMap(({ message: m }) => (m.role === 'tool' ? [[m.toolCallId, m.status]] : []));
    expect(results.slice(-2)).toEqual([
      ['late-1', 'cancelled'],
      ['late-2', 'cancelled'],
    ]);
  });

  it('a turn under its budget, or an agent without one, never concludes early', async () => {
    const script = () => [
      { text: 'reading', toolCalls: [read('a')], usage: { inputTokens: 1_000, outputTokens: 100 } },
      { text: 'done', usage: { inputTokens: 1_200, outputTokens: 100 } },
    ];
    h = await harness(script(), { agents: budgeted });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(outcome).not.toHaveProperty('stoppedBy');
    await h.runtime.shutdown();
    h = await harness([{ text: 'reading', toolCalls: [read('a')], usage: { inputTokens: 900_000 } }, { text: 'done' }]);
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(h.model.requests[1]!.tools).not.toEqual([]);
  });
});
