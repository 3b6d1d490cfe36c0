import { afterEach, describe, expect, it } from 'vitest';
import { NOT_EXECUTED_RESULT_TEXT, type ModelCallOptions } from '../../../src/index.js';
import { blockingTool, harness, nextUpdate, readFileTool, startTurn, types, withoutWorldStateMessages, writeFileTool, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

/** A model step that waits until its call is aborted, and reports that it saw the abort. */
function waitingStep(seen: { aborted: boolean }, entered: () => void) {
  return (_request: unknown, { signal }: ModelCallOptions) =>
    new Promise<never>((_resolve, reject) => {
      entered();
      signal.addEventListener('abort', () => {
        seen.aborted = true;
        reject(new Error('aborted'));
      });
    });
}

describe('cancellation (RT-2, 000 §12)', () => {
  it('cancels a waiting model call: the signal aborts and the turn ends cancelled', async () => {
    const seen = { aborted: false };
    let entered: () => void = () => undefined;
    const inCall = new Promise<void>((r) => (entered = r));
    h = await harness([waitingStep(seen, entered)]);
    const turnId = await startTurn(h.session, 'hi');
    await inCall;
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(seen.aborted).toBe(true);
    expect((await h.storage.getTurn(turnId))?.status).toBe('cancelled');
    expect(withoutWorldStateMessages(await h.storage.listMessages(h.session.id)).map((m) => m.message.role)).toEqual(['user']);
  });

  it('discards a partial draft when a streaming model call is cancelled', async () => {
    const seen = { aborted: false };
    const model = {
      capabilities: { contextWindow: 10_000, maxOutputTokens: 1_000, maxReasoningTokens: 0 },
      requests: [] as unknown[],
      async *stream(_req: unknown, { signal }: ModelCallOptions) {
        yield { type: 'text_delta' as const, text: 'partial ' };
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => ((seen.aborted = true), resolve())));
      },
    };
    h = await harness([], { model });
    const delta = nextUpdate(h.session, 'text_delta');
    const turnId = await startTurn(h.session, 'hi');
    await delta;
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running', draftText: 'partial ' });
    await h.session.cancelTurn(turnId);
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(seen.aborted).toBe(true);
    const t = types(h.updates);
    expect(t.slice(t.indexOf('text_delta'))).toEqual(['text_delta', 'draft_cleared', 'phase_changed', 'turn_finished']);
    expect(withoutWorldStateMessages(await h.storage.listMessages(h.session.id)).map((m) => m.message.role)).toEqual(['user']);
  });

  it('cancels a running tool: its signal aborts, it gets a cancelled result, later calls are cancelled in order', async () => {
    const blocking = blockingTool();
    h = await harness(
      [{ text: 'x', toolCalls: [{ id: 'long', name: 'long_job', args: {} }, { id: 'next', name: 'read_file', args: { path: 'a' } }] }],
      { tools: [blocking.tool, readFileTool()] },
    );
    const turnId = await startTurn(h.session, 'go');
    await blocking.started;
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(blocking.seen.aborted).toBe(true);
    const results = (await h.storage.listMessages(h.session.id)).flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));
    expect(results.map((r) => [r.toolCallId, r.status, r.content])).toEqual([
      ['long', 'cancelled', 'tool call cancelled by the user'],
      ['next', 'cancelled', NOT_EXECUTED_RESULT_TEXT],
    ]);
    expect(h.model.requests).toHaveLength(1);
  });

  it('cancels a pending approval: the call gets a cancelled result and never runs', async () => {
    const log: string[] = [];
    h = await harness([{ text: 'x', toolCalls: [{ id: 'w1', name: 'write_file', args: { path: 'a', text: 'b' } }] }], {
      tools: [writeFileTool(log)],
    });
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'go');
    await asked;
    await h.session.cancelTurn(turnId);
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(log).toEqual([]);
    expect(h.updates.find((u) => u.update.type === 'permission_resolved')?.update).toEqual({
      type: 'permission_resolved',
      toolCallId: 'w1',
      decision: 'cancelled',
    });
    const last = (await h.storage.listMessages(h.session.id)).at(-1)?.message;
    expect(last).toMatchObject({ role: 'tool', toolCallId: 'w1', status: 'cancelled' });
  });

  it('refuses to cancel anything but the active turn', async () => {
    h = await harness([{ text: 'done' }]);
    expect(await h.session.cancelTurn('turn_unknown')).toEqual({ ok: false, error: { code: 'TurnNotActive' } });
    const turnId = await startTurn(h.session, 'hi');
    await h.session.waitForTurn(turnId);
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: false, error: { code: 'TurnNotActive' } });
    expect(await h.session.cancelTurn(42)).toMatchObject({ ok: false, error: { code: 'InvalidInput' } });
  });
});

describe('a tool that ignores its signal (issue 4, item 7)', () => {
  it('still ends the turn cancelled at once, and its late result is never written', async () => {
    const { defineTool } = await import('../../../src/index.js');
    const { z } = await import('zod');
    let started: () => void = () => undefined;
    const running = new Promise<void>((r) => (started = r));
    let finish: () => void = () => undefined;
    let returned = false;
    const stubborn = defineTool({
      name: 'stubborn',
      description: 'ignores its abort signal',
      effect: 'read',
      input: z.object({}),
      execute: async () => {
        started();
        await new Promise<void>((r) => (finish = r));
        returned = true;
        return { status: 'succeeded', content: 'finished anyway' };
      },
    });
    h = await harness([{ text: 'x', toolCalls: [{ id: 's1', name: 'stubborn', args: {} }] }, { text: 'never' }], { tools: [stubborn] });
    const turnId = await startTurn(h.session, 'go');
    await running;
    await h.session.cancelTurn(turnId);
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    finish();
    // Let the tool's late promise settle, then wait for a full round trip through the runtime.
    await new Promise<void>((r) => setImmediate(r));
    expect(returned).toBe(true);
    const results = (await h.storage.listMessages(h.session.id)).filter((m) => m.message.role === 'tool');
    expect(results.map((m) => m.message)).toEqual([
      { role: 'tool', toolCallId: 's1', toolName: 'stubborn', status: 'cancelled', content: 'tool call cancelled by the user', endedTurn: { kind: 'cancelled' } },
    ]);
    expect(h.updates.at(-1)?.update.type).toBe('turn_finished');
    expect(h.model.requests).toHaveLength(1);
  });
});
