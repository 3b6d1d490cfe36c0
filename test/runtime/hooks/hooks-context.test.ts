import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { AfterContextHookContext, ContextHookContext } from '../../../src/index.js';
import { harness, runTurn, startTurn, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const read = (path: string) => ({ id: 'r1', name: 'read_file', args: { path } });

function signalled<T = void>() {
  let fire!: (value: T) => void;
  const fired = new Promise<T>((resolve) => (fire = resolve));
  return { fired, fire };
}

describe('beforeContextBuild and afterContextBuild hooks (RL-4, CW-8)', () => {
  it('run around every model call: the parts they add follow the agent system part, and the after hook sees the built request', async () => {
    const before: Omit<ContextHookContext, 'signal'>[] = [];
    const after: { modelCallIndex: number; keys: string[]; tokens: number }[] = [];
    h = await harness([{ text: 'reading', toolCalls: [read('a.txt')] }, { text: 'done' }], {
      permissionMode: 'auto',
      hooks: {
        beforeContextBuild: ({ signal: _signal, ...ctx }) => {
          before.push(ctx);
          return { systemParts: [{ key: 'host/policy', content: `call ${ctx.modelCallIndex}: never delete files` }] };
        },
      },
      agents: {
        default: {
          hooks: {
            afterContextBuild: (ctx: AfterContextHookContext) => {
              after.push({ modelCallIndex: ctx.modelCallIndex, keys: ctx.request.system.map((p) => p.key), tokens: ctx.estimatedInputTokens });
              ctx.request.system.length = 0; // a copy: the request sent is unchanged
              return { systemParts: [{ key: 'agent/reminder', content: 'answer briefly' }] };
            },
          },
        },
      },
    });
    const { turnId, outcome } = await runTurn(h.session, 'read it');
    expect(outcome.status).toBe('completed');
    expect(before).toEqual([1, 2].map((modelCallIndex) => ({ sessionId: h!.session.id, turnId, agent: 'default', mode: 'auto', modelCallIndex })));
    expect(after.map(({ modelCallIndex, keys }) => ({ modelCallIndex, keys }))).toEqual([
      { modelCallIndex: 1, keys: ['core/agent-system', 'host/policy'] },
      { modelCallIndex: 2, keys: ['core/agent-system', 'host/policy'] },
    ]);
    expect(after[0]!.tokens).toBeGreaterThan(0);
    expect(h.model.requests.map((r) => r.system.map((p) => p.key))).toEqual([
      ['core/agent-system', 'host/policy', 'agent/reminder'],
      ['core/agent-system', 'host/policy', 'agent/reminder'],
    ]);
    expect(h.model.requests[1]!.system[1]!.content).toBe('call 2: never delete files');
  });

  it('refuses a system part over the CW-8 limit as hook_failed before any model call, not as model_protocol_error', async () => {
    h = await harness([{ text: 'never' }], {
      hooks: { beforeContextBuild: () => ({ systemParts: [{ key: 'host/huge', content: 'x'.repeat(40_000) }] }) },
    });
    const { outcome } = await runTurn(h.session, 'hello');
    expect(outcome).toMatchObject({ status: 'failed', code: 'hook_failed' });
    expect((outcome as { message: string }).message).toMatch(/SystemPartTooLarge: the system part 'host\/huge' added by the beforeContextBuild hook of the runtime estimates 1000\d tokens \(limit 10000\)/);
    expect(h.model.requests).toHaveLength(0);
    expect((await h.storage.getTurn((await h.storage.listTurns(h.session.id))[0]!.id))?.errorCode).toBe('hook_failed');
  });

  it('refuses a part whose key is taken, or an answer of the wrong shape, as hook_failed', async () => {
    h = await harness([{ text: 'never' }], { hooks: { afterContextBuild: () => ({ systemParts: [{ key: 'core/agent-system', content: 'me too' }] }) } });
    expect((await runTurn(h.session, 'one')).outcome).toMatchObject({ code: 'hook_failed', message: expect.stringContaining("the system part key 'core/agent-system' is already used") });
    await h.runtime.shutdown();
    h = await harness([{ text: 'never' }], { hooks: { beforeContextBuild: () => 'be nice' as never } });
    expect((await runTurn(h.session, 'two')).outcome).toMatchObject({ code: 'hook_failed', message: expect.stringContaining('answered what it may not') });
    expect(h.model.requests).toHaveLength(0);
  });

  it('fails the turn hook_failed when a context hook throws', async () => {
    h = await harness([{ text: 'never' }], { agents: { default: { hooks: { beforeContextBuild: () => Promise.reject(new Error('no policy')) } } } });
    expect((await runTurn(h.session, 'hi')).outcome).toEqual({
      status: 'failed',
      code: 'hook_failed',
      message: 'hook_failed: the beforeContextBuild hook of the agent threw: no policy',
    });
  });

  it('fails the turn hook_timeout when a context hook passes its limit on the chart clock', async () => {
    const clock = new SimulatedClock();
    const reached = signalled<AbortSignal>();
    h = await harness([{ text: 'never' }], { clock, hooks: { timeoutMs: 1_000, afterContextBuild: ({ signal }) => new Promise<undefined>(() => reached.fire(signal)) } });
    const turnId = await startTurn(h.session, 'hi');
    const signal = await reached.fired;
    clock.increment(1_000);
    expect(await h.session.waitForTurn(turnId)).toEqual({
      status: 'failed',
      code: 'hook_timeout',
      message: 'hook_timeout: the afterContextBuild hook of the runtime did not answer within 1000 ms',
    });
    expect(signal.aborted).toBe(true);
    expect(h.model.requests).toHaveLength(0);
  });

  it('a cancel reaches a running context hook: its signal aborts and the turn ends cancelled without a model call', async () => {
    const reached = signalled<AbortSignal>();
    h = await harness([{ text: 'never' }], { hooks: { beforeContextBuild: ({ signal }) => new Promise<undefined>(() => reached.fire(signal)) } });
    const turnId = await startTurn(h.session, 'hi');
    const signal = await reached.fired;
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(signal.aborted).toBe(true);
    expect(h.model.requests).toHaveLength(0);
  });
});
