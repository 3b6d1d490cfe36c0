import { afterEach, describe, expect, it } from 'vitest';
import { measureBudget, scriptedModel, type ContextWindowPreview, type ModelRequest } from '../../../src/index.js';
import { harness, runTurn, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

describe('inspectContextWindow (CW-9)', () => {
  it('shows exactly the request a real model call received, through the same prepare', async () => {
    const previews: ContextWindowPreview[] = [];
    const model = scriptedModel([
      { text: 'x', toolCalls: [{ name: 'read_file', args: { path: 'a' } }] },
      async (_request) => {
        previews.push(await h!.runtime.inspectContextWindow(h!.session.id));
        return { text: 'done' };
      },
    ]);
    h = await harness([], { model });
    await runTurn(h.session, 'look at a');
    const request = model.requests[1]! as ModelRequest;
    const [preview] = previews;
    expect(preview!.system).toEqual(request.system);
    expect(preview!.conversation).toEqual(request.messages);
    expect(preview!.tools).toEqual(request.tools);
    expect(preview!.budget).toEqual(measureBudget(request));
    expect(preview!.provenance).toHaveLength(request.messages.length);
    expect(model.requests).toHaveLength(2);
  });

  it('reports the auto-compact line and the share of it in use', async () => {
    const model = scriptedModel([{ text: 'hello' }], { capabilities: { contextWindow: 10_000, maxOutputTokens: 1_000, maxReasoningTokens: 500 } });
    h = await harness([], { model });
    await runTurn(h.session, 'hi');
    const preview = await h.runtime.inspectContextWindow(h.session.id);
    expect(preview.autoCompactTokenLimit).toBe(Math.ceil((10_000 - 1_000 - 500) * 0.85));
    const used = preview.budget.estimatedInputTokens + preview.budget.reservedOutputTokens;
    expect(preview.percentUsed).toBe(Math.round((1000 * used) / preview.autoCompactTokenLimit) / 10);
    expect(preview.budget.reservedOutputTokens).toBe(1_000);
  });

  it('samples no world state and calls no model: a mode change shows only at the next model call', async () => {
    h = await harness([{ text: 'one' }, { text: 'two' }]);
    await runTurn(h.session, 'first');
    await h.session.setPermissionMode('read_only');
    const preview = await h.runtime.inspectContextWindow(h.session.id);
    expect(h.model.requests).toHaveLength(1);
    expect(preview.conversation.some((m) => m.role === 'user' && m.text.includes('permission_mode: read_only'))).toBe(false);
    await runTurn(h.session, 'second');
    expect(h.model.requests[1]!.messages.some((m) => m.role === 'user' && m.text.includes('permission_mode: read_only'))).toBe(true);
  });

  it('never shows the draft of a response still streaming', async () => {
    let preview: ContextWindowPreview | undefined;
    const model = {
      capabilities: { contextWindow: 100_000, maxOutputTokens: 1_000, maxReasoningTokens: 0 },
      async *stream() {
        yield { type: 'text_delta' as const, text: 'DRAFT TEXT' };
        preview = await h!.runtime.inspectContextWindow(h!.session.id);
        yield { type: 'response_completed' as const, response: { text: 'DRAFT TEXT', reasoning: '', toolCalls: [] } };
      },
    };
    h = await harness([], { model });
    await runTurn(h.session, 'hi');
    expect(JSON.stringify(preview!.conversation)).not.toContain('DRAFT TEXT');
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'terminal' });
  });

  it('answers an unknown session with a typed error', async () => {
    h = await harness([]);
    await expect(h.runtime.inspectContextWindow('ses_missing')).rejects.toMatchObject({ code: 'UnknownSession' });
  });
});
