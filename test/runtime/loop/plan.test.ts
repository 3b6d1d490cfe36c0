import { afterEach, describe, expect, it } from 'vitest';
import type { Plan, UpdateEnvelope } from '../../../src/index.js';
import { harness, runTurn, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const plan: Plan = {
  explanation: 'two steps',
  plan: [
    { step: 'read the code', status: 'in_progress' },
    { step: 'fix the bug', status: 'pending' },
  ],
};

describe('update_plan (RT-22)', () => {
  it('stores the plan, then emits plan_updated with the whole plan, and keeps it in the snapshot', async () => {
    h = await harness([{ text: 'planning', toolCalls: [{ id: 'p1', name: 'update_plan', args: plan }] }, { text: 'planned' }]);
    const storedWhenEmitted: unknown[] = [];
    h.session.updates$.subscribe((u: UpdateEnvelope) => {
      if (u.update.type === 'plan_updated') storedWhenEmitted.push(h!.storage.latestPlan(h!.session.id));
    });
    const { turnId, outcome } = await runTurn(h.session, 'plan it');
    expect(outcome).toEqual({ status: 'completed', finalText: 'planned' });
    expect(h.updates.find((u) => u.update.type === 'plan_updated')?.update).toEqual({ type: 'plan_updated', plan });
    expect(await storedWhenEmitted[0]).toMatchObject({ turnId, plan });
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'terminal', plan });
    expect(h.model.requests[1]!.messages.at(-1)).toMatchObject({ role: 'tool', toolName: 'update_plan', status: 'success' });
    expect(h.model.requests[0]!.tools.map((t) => t.name)).toEqual(['read_file', 'update_plan']);
  });

  it('an invalid plan fails the call, changes no stored plan and emits no plan_updated', async () => {
    h = await harness([
      { text: 'bad', toolCalls: [{ name: 'update_plan', args: { plan: [{ step: 'a', status: 'someday' }] } }] },
      { text: 'two in progress', toolCalls: [{ name: 'update_plan', args: { plan: [{ step: 'a', status: 'in_progress' }, { step: 'b', status: 'in_progress' }] } }] },
      { text: 'gave up' },
    ]);
    const { outcome } = await runTurn(h.session, 'plan it');
    expect(outcome).toEqual({ status: 'completed', finalText: 'gave up' });
    expect(await h.storage.latestPlan(h.session.id)).toBeUndefined();
    expect(h.updates.some((u) => u.update.type === 'plan_updated')).toBe(false);
    const results = h.model.requests[2]!.messages.filter((m) => m.role === 'tool');
    expect(results.map((r) => (r.role === 'tool' ? [r.status, r.content.startsWith('InvalidArguments')] : []))).toEqual([
      ['error', true],
      ['error', true],
    ]);
  });

  it('a plan write that fails is an error result and no plan_updated', async () => {
    h = await harness([{ text: 'x', toolCalls: [{ name: 'update_plan', args: plan }] }, { text: 'continuing' }]);
    h.storage.failNext('savePlan');
    const { outcome } = await runTurn(h.session, 'plan it');
    expect(outcome).toEqual({ status: 'completed', finalText: 'continuing' });
    expect(h.updates.some((u) => u.update.type === 'plan_updated')).toBe(false);
    expect(h.model.requests[1]!.messages.at(-1)).toMatchObject({ role: 'tool', status: 'error' });
  });

  it('records update_plan spans as control_tool', async () => {
    h = await harness([{ text: 'x', toolCalls: [{ name: 'update_plan', args: plan }] }, { text: 'ok' }]);
    await runTurn(h.session, 'plan it');
    await h.runtime.flushTrace();
    const spans = await h.storage.listSpans(h.session.id);
    expect(spans.find((s) => s.kind === 'tool_call')).toMatchObject({ name: 'update_plan', source: 'control_tool', status: 'succeeded' });
  });
});
