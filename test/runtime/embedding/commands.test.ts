import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, scriptedModel, sqliteStorage, TurnchartError, type ModelCallOptions } from '../../../src/index.js';
import { harness, nextUpdate, readFileTool, runTurn, startTurn, withoutWorldState, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

function held() {
  let release: () => void = () => undefined;
  let entered: () => void = () => undefined;
  const inCall = new Promise<void>((r) => (entered = r));
  const gate = new Promise<void>((r) => (release = r));
  const step = async (_req: unknown, _o: ModelCallOptions) => {
    entered();
    await gate;
    return { text: 'released' };
  };
  return { step, inCall, release };
}

describe('session commands (RT-1…RT-7)', () => {
  it('returns the same turn for a repeated clientRequestId and Busy for another request', async () => {
    const hold = held();
    h = await harness([hold.step, { text: 'second' }]);
    const input = [{ type: 'text', text: 'hi' }];
    const first = await h.session.startTurn({ clientRequestId: 'c1', input });
    expect(first).toMatchObject({ ok: true });
    const turnId = (first as { turnId: string }).turnId;
    expect(await h.session.startTurn({ clientRequestId: 'c1', input })).toEqual({ ok: true, turnId });
    expect(await h.session.startTurn({ clientRequestId: 'c2', input })).toEqual({ ok: false, error: { code: 'Busy', turnId } });
    expect(await h.session.acceptedTurn('c1')).toEqual({ ok: true, turnId });
    expect(await h.session.acceptedTurn('c2')).toEqual({ ok: false, error: { code: 'NotAccepted' } });
    await hold.inCall;
    hold.release();
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'released' });
    // Once idle, the duplicate still maps to the first turn and never runs again.
    expect(await h.session.startTurn({ clientRequestId: 'c1', input })).toEqual({ ok: true, turnId });
    expect(h.model.requests).toHaveLength(1);
    const next = await runTurn(h.session, 'again', 'c2');
    expect(next.outcome).toEqual({ status: 'completed', finalText: 'second' });
  });

  it('answers a command issued while the chart is still handling another (found by the generated paths)', async () => {
    const hold = held();
    h = await harness([hold.step]);
    const cancelled: Array<Promise<unknown>> = [];
    // A host that cancels as soon as it sees the turn start: both commands land in one flush.
    h.session.updates$.subscribe((u) => {
      if (u.update.type === 'turn_started') cancelled.push(h!.session.cancelTurn(u.turnId));
    });
    const started = await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: 'hi' }] });
    expect(started).toMatchObject({ ok: true });
    expect(await Promise.all(cancelled)).toEqual([{ ok: true }]);
    expect(await h.session.waitForTurn((started as { turnId: string }).turnId)).toEqual({ status: 'cancelled' });
  });

  it('stop() from an update subscriber still ends the turn it interrupts (found by the generated paths)', async () => {
    const hold = held();
    h = await harness([hold.step]);
    const finished: string[] = [];
    const stopping: Array<Promise<void>> = [];
    h.session.updates$.subscribe((u) => {
      if (u.update.type === 'turn_started') stopping.push(h!.session.stop());
      if (u.update.type === 'turn_finished') finished.push(JSON.stringify(u.update.outcome));
    });
    const started = await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: 'hi' }] });
    await Promise.all(stopping);
    expect(finished).toEqual([JSON.stringify({ status: 'failed', code: 'actor_stopped', message: 'the session stopped during the turn' })]);
    expect(await h.storage.getTurn((started as { turnId: string }).turnId)).toMatchObject({ status: 'failed', errorCode: 'actor_stopped' });
  });

  it('accepts a turn before anything is written and never waits for the loop', async () => {
    const hold = held();
    h = await harness([hold.step]);
    const started = await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: 'hi' }] });
    expect(started.ok).toBe(true);
    // startTurn returned while the model call is still held.
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running', clientRequestId: 'c1' });
    expect(h.updates[0]?.update).toEqual({ type: 'turn_started', clientRequestId: 'c1' });
    await hold.inCall;
    hold.release();
    await h.session.waitForTurn((started as { turnId: string }).turnId);
  });

  it('refuses input without text, and bad shapes, with typed errors; the session keeps working', async () => {
    h = await harness([{ text: 'still fine' }]);
    expect(await h.session.startTurn({ clientRequestId: 'c1', input: [] })).toEqual({ ok: false, error: { code: 'EmptyInput' } });
    expect(await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: '   ' }] })).toEqual({
      ok: false,
      error: { code: 'EmptyInput' },
    });
    for (const bad of [null, 'hi', { input: [] }, { clientRequestId: '', input: [] }, { clientRequestId: 'c', input: [{ type: 'image' }] }]) {
      expect(await h.session.startTurn(bad)).toMatchObject({ ok: false, error: { code: 'InvalidInput' } });
    }
    const huge = 'x'.repeat(1_000_001);
    expect(await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: huge }] })).toMatchObject({
      ok: false,
      error: { code: 'InvalidInput' },
    });
    expect(await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'skill', name: 'review' }, { type: 'text', text: 'go' }] })).toEqual({
      ok: false,
      error: { code: 'UnknownSkill', name: 'review' },
    });
    expect(await h.session.setPermissionMode('yolo')).toMatchObject({ ok: false, error: { code: 'InvalidInput' } });
    expect(h.session.replayUpdates(-1)).toMatchObject({ ok: false, error: { code: 'InvalidInput' } });
    expect(await h.session.waitForTurn('turn_missing')).toEqual({ status: 'unknown_turn' });
    expect(await h.storage.listTurns(h.session.id)).toEqual([]);
    expect((await runTurn(h.session, 'ok', 'c1')).outcome).toEqual({ status: 'completed', finalText: 'still fine' });
  });

  it('joins several text parts into one user message', async () => {
    h = await harness([{ text: 'ok' }]);
    await h.session.startTurn({ clientRequestId: 'c', input: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] });
    await h.session.waitForTurn((await h.session.acceptedTurn('c') as { turnId: string }).turnId);
    expect(withoutWorldState(h.model.requests[0]!.messages)).toEqual([{ role: 'user', text: 'one\n\ntwo' }]);
  });

  it('delivers agent messages through the mailbox: never a turn of its own, drained before the next model call', async () => {
    h = await harness([{ text: 'x', toolCalls: [{ name: 'read_file', args: { path: 'a' } }] }, { text: 'noted' }, { text: 'later' }]);
    expect(await h.session.deliverAgentMessage({ from: 'worker-1', text: 'early news' })).toEqual({ ok: true });
    expect(h.session.snapshot().runtime).toEqual({ kind: 'idle' });
    expect(h.model.requests).toHaveLength(0);

    const toolStarted = nextUpdate(h.session, 'tool_call_started');
    const turnId = await startTurn(h.session, 'go');
    await toolStarted;
    await h.session.deliverAgentMessage({ from: 'worker-2', text: 'mid-turn news' });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'noted' });
    const [first, second] = h.model.requests;
    expect(withoutWorldState(first!.messages)).toEqual([
      { role: 'user', text: 'go' },
      { role: 'user', text: 'early news' },
    ]);
    expect(second!.messages.at(-1)).toEqual({ role: 'user', text: 'mid-turn news' });
    const stored = await h.storage.listMessages(h.session.id);
    expect(stored.filter((m) => m.message.role === 'user' && m.message.kind === 'agent_message').map((m) => m.message)).toEqual([
      { role: 'user', kind: 'agent_message', text: 'early news', from: 'worker-1' },
      { role: 'user', kind: 'agent_message', text: 'mid-turn news', from: 'worker-2' },
    ]);
  });

  it('refuses an agent message of 4 000 tokens or more', async () => {
    h = await harness([]);
    const result = await h.session.deliverAgentMessage({ from: 'w', text: 'y'.repeat(16_000) });
    expect(result).toMatchObject({ ok: false, error: { code: 'MessageTooLarge' } });
    expect(await h.session.deliverAgentMessage({ from: 'w' })).toMatchObject({ ok: false, error: { code: 'InvalidInput' } });
  });

  it('rejects bad runtime options, unknown agents and sessions with a TurnchartError', async () => {
    await expect(createRuntime({ storage: {} as never, model: scriptedModel([]) })).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(
      createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([]), agents: { default: { maxModelCalls: -1 } } }),
    ).rejects.toBeInstanceOf(TurnchartError);
    await expect(
      createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([]), agents: { default: { systemPrompt: 'p'.repeat(40_000) } } }),
    ).rejects.toMatchObject({ code: 'InvalidOptions', message: expect.stringMatching(/limit 10000/) });
    const dup = readFileTool();
    await expect(
      createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([]), tools: [dup, dup] }),
    ).rejects.toMatchObject({ code: 'ToolNameConflict' });
    h = await harness([]);
    await expect(h.runtime.createSession({ agent: 'nobody' })).rejects.toMatchObject({ code: 'UnknownAgent' });
    await expect(h.runtime.openSession('ses_missing')).rejects.toMatchObject({ code: 'UnknownSession' });
  });

  it('gives the explorer agent 15 model calls and the default 20', async () => {
    const always = Array.from({ length: 30 }, (_, i) => ({ text: `${i}`, toolCalls: [{ name: 'read_file', args: { path: `p${i}` } }] }));
    h = await harness(always);
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ code: 'max_model_calls' });
    expect(h.model.requests).toHaveLength(20);
    const explorer = await h.runtime.createSession({ agent: 'explorer', permissionMode: 'auto' });
    const model = scriptedModel(always);
    const rt = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model, tools: [readFileTool()] });
    const s = await rt.createSession({ agent: 'explorer' });
    expect((await runTurn(s, 'go')).outcome).toMatchObject({ code: 'max_model_calls' });
    expect(model.requests).toHaveLength(15);
    expect(explorer.agent).toBe('explorer');
    await rt.shutdown();
  });

  it('answers every command after shutdown with RuntimeStopped', async () => {
    h = await harness([]);
    const { session } = h;
    await h.runtime.shutdown();
    await expect(h.runtime.createSession()).rejects.toMatchObject({ code: 'RuntimeStopped' });
    h = undefined;
    expect(await session.startTurn({ clientRequestId: 'c', input: [{ type: 'text', text: 'hi' }] })).toEqual({
      ok: false,
      error: { code: 'RuntimeStopped' },
    });
    expect(await session.cancelTurn('t')).toEqual({ ok: false, error: { code: 'RuntimeStopped' } });
  });
});
