import { afterEach, describe, expect, it } from 'vitest';
import { blockingTool, harness, nextUpdate, runTurn, startTurn, writeFileTool, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const usage = (inputTokens: number, outputTokens: number, cachedInputTokens = 0, reasoningTokens = 0) => ({ inputTokens, outputTokens, cachedInputTokens, reasoningTokens });

describe('token usage per turn', () => {
  it('sums what each model call reported into the outcome, and shows the running sum in the snapshot', async () => {
    h = await harness(
      [
        { text: 'writing', toolCalls: [{ name: 'write_file', args: { path: 'a.txt', text: 'x' } }], usage: usage(100, 10, 80, 4) },
        { text: 'done', usage: { inputTokens: 150, outputTokens: 5 } },
      ],
      { tools: [writeFileTool()] },
    );
    expect(h.session.snapshot().runtime).toEqual({ kind: 'idle' });
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'write a.txt');
    const { update } = await asked;
    // Waiting for approval: one call made, its usage already in the snapshot.
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running', phase: 'waiting_permission', usage: usage(100, 10, 80, 4) });
    if (update.type !== 'permission_requested') throw new Error('unexpected update');
    await h.session.resolvePermission({ turnId, toolCallId: update.toolCallId, decision: 'allow_once' });

    const outcome = await h.session.waitForTurn(turnId);
    expect(outcome).toEqual({ status: 'completed', finalText: 'done', usage: usage(250, 15, 80, 4) });
    // The turn_finished update and the terminal snapshot carry the same outcome.
    expect(h.updates.at(-1)?.update).toEqual({ type: 'turn_finished', outcome });
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'terminal', outcome });
  });

  it('starts each turn from zero, and reports none for a port that reports none', async () => {
    h = await harness([{ text: 'one', usage: usage(10, 1) }, { text: 'two' }]);
    expect((await runTurn(h.session, 'first')).outcome).toEqual({ status: 'completed', finalText: 'one', usage: usage(10, 1) });
    expect((await runTurn(h.session, 'second')).outcome).toEqual({ status: 'completed', finalText: 'two' });
  });

  it('carries usage on failed and cancelled outcomes too', async () => {
    h = await harness([{ text: 'trying', toolCalls: [{ name: 'read_file', args: { path: 'a' } }], usage: usage(20, 2) }, { error: 'provider', message: 'upstream down' }]);
    expect((await runTurn(h.session, 'fail')).outcome).toEqual({ status: 'failed', code: 'model_error', message: 'upstream down', usage: usage(20, 2) });
    await h.runtime.shutdown();

    const { tool, started } = blockingTool();
    h = await harness([{ text: 'working', toolCalls: [{ name: 'long_job', args: {} }], usage: usage(30, 3) }], { tools: [tool], permissionMode: 'auto' });
    const turnId = await startTurn(h.session, 'work');
    await started;
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled', usage: usage(30, 3) });
  });

  it("counts an in-turn compaction's summary call in the turn", async () => {
    h = await harness(
      [
        { error: 'overflow', message: 'prompt is too long' },
        { text: 'SUMMARY of it all', usage: usage(40, 8) },
        { text: 'answered', usage: usage(12, 3) },
      ],
    );
    expect((await runTurn(h.session, 'a long question')).outcome).toEqual({ status: 'completed', finalText: 'answered', usage: usage(52, 11) });
  });

  it('fails a turn whose port reports malformed usage as model_protocol_error', async () => {
    h = await harness([{ text: 'x', usage: { inputTokens: -1 } }]);
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'failed', code: 'model_protocol_error', message: expect.stringContaining('usage') });
  });
});
