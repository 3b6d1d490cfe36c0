import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { createRuntime, defineTool, scriptedModel, sqliteStorage, type Hooks, type ToolHookContext, type ToolResultMessage } from '../../../src/index.js';
import { argumentsHash } from '../../../src/runtime/tool-audit.js';
import { harness, readFileTool, runTurn, startTurn, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const read = (path: string, id = 'r1') => ({ id, name: 'read_file', args: { path } });

/** The tool results of the session as stored, in order. */
async function results(): Promise<ToolResultMessage[]> {
  const stored = await h!.storage.listMessages(h!.session.id);
  return stored.flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));
}

/** A promise and the function that settles it: a hook reports it was reached, a test waits for that. */
function signalled<T = void>() {
  let fire!: (value: T) => void;
  const fired = new Promise<T>((resolve) => (fire = resolve));
  return { fired, fire };
}

describe('beforeToolDispatch and afterToolDispatch hooks (RL-4)', () => {
  it('gives the hook a typed context, and a denial becomes a denied result the model sees while the turn goes on', async () => {
    const log: string[] = [];
    const seen: Omit<ToolHookContext, 'signal'>[] = [];
    const hooks: Hooks = {
      beforeToolDispatch: ({ signal, ...ctx }) => {
        expect(signal).toBeInstanceOf(AbortSignal);
        seen.push(ctx);
        return ctx.args.path === 'secret.txt' ? { decision: 'deny', reason: 'secrets stay put' } : undefined;
      },
    };
    h = await harness([{ text: 'reading', toolCalls: [read('secret.txt'), read('a.txt', 'r2')] }, { text: 'done' }], {
      tools: [readFileTool(log)],
      hooks,
      permissionMode: 'auto',
    });
    const { turnId, outcome } = await runTurn(h.session, 'read them');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(log).toEqual(['read_file a.txt']);
    expect(seen[0]).toEqual({ sessionId: h.session.id, turnId, agent: 'default', mode: 'auto', toolCallId: 'r1', toolName: 'read_file', args: { path: 'secret.txt' } });
    expect((await results()).map((r) => [r.status, r.content])).toEqual([
      ['denied', 'denied by hook: secrets stay put'],
      ['succeeded', 'contents of a.txt'],
    ]);
    const sent = h.model.requests[1]!.messages.filter((m) => m.role === 'tool');
    expect(sent[0]).toMatchObject({ toolCallId: 'r1', content: 'denied by hook: secrets stay put' });
  });

  it('runs the tool with rewritten arguments, validated again; the agent hook runs after the runtime hook and sees its rewrite', async () => {
    const log: string[] = [];
    const order: string[] = [];
    h = await harness([{ text: 'reading', toolCalls: [read('a.txt')] }, { text: 'done' }], {
      tools: [readFileTool(log)],
      permissionMode: 'auto',
      hooks: {
        beforeToolDispatch: ({ args }) => {
          order.push(`runtime ${String(args.path)}`);
          return { decision: 'rewrite', args: { path: `sandbox/${String(args.path)}` } };
        },
      },
      agents: {
        default: {
          hooks: {
            beforeToolDispatch: ({ args }) => {
              order.push(`agent ${String(args.path)}`);
              // Changing the copy a hook gets changes nothing.
              args.path = 'elsewhere';
            },
          },
        },
      },
    });
    expect((await runTurn(h.session, 'read')).outcome.status).toBe('completed');
    expect(order).toEqual(['runtime a.txt', 'agent sandbox/a.txt']);
    expect(log).toEqual(['read_file sandbox/a.txt']);
    const [entry] = (await h.runtime.auditLog(h.session.id)).entries;
    expect(entry).toMatchObject({ verdict: 'allowed', decidedBy: 'mode', status: 'succeeded', argumentsHash: argumentsHash({ path: 'a.txt' }) });
    expect(entry!.dispatchedArgumentsHash).toBe(argumentsHash({ path: 'sandbox/a.txt' }));
  });

  it('fails the call with hook_invalid_rewrite when the rewritten arguments fail the tool schema', async () => {
    const log: string[] = [];
    h = await harness([{ text: 'reading', toolCalls: [read('a.txt')] }, { text: 'done' }], {
      tools: [readFileTool(log)],
      permissionMode: 'auto',
      hooks: { beforeToolDispatch: () => ({ decision: 'rewrite', args: { path: 42 } }) },
    });
    expect((await runTurn(h.session, 'read')).outcome.status).toBe('completed');
    expect(log).toEqual([]);
    const [result] = await results();
    expect(result!.status).toBe('failed');
    expect(result!.content).toMatch(/^hook_invalid_rewrite: the runtime's hook rewrote the arguments into ones the tool refuses: .*path/s);
    expect((await h.runtime.auditLog(h.session.id)).entries[0]).toMatchObject({ verdict: 'denied', decidedBy: 'hook', errorCode: 'hook_invalid_rewrite', executionMs: null });
  });

  it('fails closed with hook_failed when the hook throws or answers what it may not, and the turn goes on', async () => {
    const log: string[] = [];
    let calls = 0;
    h = await harness([{ text: 'reading', toolCalls: [read('a.txt'), read('b.txt', 'r2')] }, { text: 'done' }], {
      tools: [readFileTool(log)],
      permissionMode: 'auto',
      hooks: {
        beforeToolDispatch: () => {
          calls += 1;
          if (calls === 1) throw new Error('policy server down');
          return { decision: 'maybe' } as never;
        },
      },
    });
    expect((await runTurn(h.session, 'read')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(log).toEqual([]);
    const [thrown, odd] = await results();
    expect(thrown).toMatchObject({ status: 'failed', content: 'hook_failed: the beforeToolDispatch hook of the runtime threw: policy server down' });
    expect(odd!.content).toMatch(/^hook_failed: the beforeToolDispatch hook of the runtime answered what it may not/);
    const entries = (await h.runtime.auditLog(h.session.id)).entries;
    expect(entries.map((e) => [e.toolCallId, e.verdict, e.decidedBy, e.errorCode])).toEqual([
      ['r2', 'denied', 'hook', 'hook_failed'],
      ['r1', 'denied', 'hook', 'hook_failed'],
    ]);
  });

  it('fails closed with hook_timeout once the hook passes its time limit on the chart clock, aborting its signal', async () => {
    const clock = new SimulatedClock();
    const reached = signalled<AbortSignal>();
    const log: string[] = [];
    h = await harness([{ text: 'reading', toolCalls: [read('a.txt')] }, { text: 'done' }], {
      tools: [readFileTool(log)],
      permissionMode: 'auto',
      clock,
      hooks: { timeoutMs: 250, beforeToolDispatch: ({ signal }) => new Promise<undefined>(() => reached.fire(signal)) },
    });
    const turnId = await startTurn(h.session, 'read');
    const signal = await reached.fired;
    expect(signal.aborted).toBe(false);
    clock.increment(249);
    expect(signal.aborted).toBe(false);
    clock.increment(1);
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(signal.aborted).toBe(true);
    expect(log).toEqual([]);
    expect((await results())[0]).toEqual(expect.objectContaining({ status: 'failed', content: 'hook_timeout: the beforeToolDispatch hook of the runtime did not answer within 250 ms' }));
    expect((await h.runtime.auditLog(h.session.id)).entries[0]).toMatchObject({ errorCode: 'hook_timeout', verdict: 'denied', decidedBy: 'hook' });
  });

  it('takes the agent hook time limit, or the default of 5 s, on the same clock', async () => {
    const clock = new SimulatedClock();
    const reached = signalled();
    h = await harness([{ text: 'reading', toolCalls: [read('a.txt')] }, { text: 'done' }], {
      permissionMode: 'auto',
      clock,
      agents: { default: { hooks: { beforeToolDispatch: () => new Promise<undefined>(() => reached.fire()) } } },
    });
    const turnId = await startTurn(h.session, 'read');
    await reached.fired;
    clock.increment(4_999);
    expect(await h.session.turnStatus(turnId)).toMatchObject({ status: 'running' });
    clock.increment(1);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'completed' });
    expect((await results())[0]!.content).toBe('hook_timeout: the beforeToolDispatch hook of the agent did not answer within 5000 ms');
  });

  it('a cancel reaches a running hook: its signal aborts, the call gets its cancelled result, the turn ends cancelled', async () => {
    const reached = signalled<AbortSignal>();
    const log: string[] = [];
    h = await harness([{ text: 'reading', toolCalls: [read('a.txt'), read('b.txt', 'r2')] }, { text: 'never' }], {
      tools: [readFileTool(log)],
      permissionMode: 'auto',
      hooks: { beforeToolDispatch: ({ signal }) => new Promise<undefined>(() => reached.fire(signal)) },
    });
    const turnId = await startTurn(h.session, 'read');
    const signal = await reached.fired;
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(signal.aborted).toBe(true);
    expect(log).toEqual([]);
    expect((await results()).map((r) => [r.toolCallId, r.status])).toEqual([
      ['r1', 'cancelled'],
      ['r2', 'cancelled'],
    ]);
    const entries = (await h.runtime.auditLog(h.session.id)).entries;
    expect(entries.map((e) => [e.toolCallId, e.verdict, e.status])).toEqual([
      ['r2', 'none', 'cancelled'],
      ['r1', 'none', 'cancelled'],
    ]);
  });

  it('shows afterToolDispatch hooks a copy of the result; a failing one withholds the result with hook_failed', async () => {
    const seen: unknown[] = [];
    h = await harness([{ text: 'reading', toolCalls: [read('a.txt'), read('b.txt', 'r2')] }, { text: 'done' }], {
      permissionMode: 'auto',
      hooks: {
        afterToolDispatch: ({ toolCallId, result }) => {
          seen.push({ toolCallId, result: { ...result } });
          result.content = 'tampered';
          if (toolCallId === 'r2') throw new Error('scanner crashed');
        },
      },
    });
    expect((await runTurn(h.session, 'read')).outcome.status).toBe('completed');
    expect(seen).toEqual([
      { toolCallId: 'r1', result: { status: 'succeeded', content: 'contents of a.txt' } },
      { toolCallId: 'r2', result: { status: 'succeeded', content: 'contents of b.txt' } },
    ]);
    const [first, second] = await results();
    expect(first).toMatchObject({ status: 'succeeded', content: 'contents of a.txt' });
    expect(second).toMatchObject({
      status: 'failed',
      content: "hook_failed: the afterToolDispatch hook of the runtime threw: scanner crashed (the tool's result, succeeded, is withheld)",
    });
    const entries = (await h.runtime.auditLog(h.session.id)).entries;
    expect(entries[0]).toMatchObject({ toolCallId: 'r2', verdict: 'allowed', decidedBy: 'mode', errorCode: 'hook_failed', status: 'failed' });
    expect(entries[0]!.executionMs).toEqual(expect.any(Number));
  });

  it('asks the user about the rewritten call, not the one the model made', async () => {
    const write = defineTool({
      name: 'write_file',
      description: 'Write',
      effect: 'write',
      input: z.object({ path: z.string() }),
      approvalPaths: (args) => [args.path],
      execute: async (args) => ({ status: 'succeeded', content: `wrote ${args.path}` }),
    });
    h = await harness([{ text: 'writing', toolCalls: [{ id: 'w1', name: 'write_file', args: { path: 'a.txt' } }] }, { text: 'done' }], {
      tools: [write],
      hooks: { beforeToolDispatch: () => ({ decision: 'rewrite', args: { path: 'drafts/a.txt' } }) },
    });
    const asked = new Promise<string[]>((resolve) =>
      h!.session.updates$.subscribe((u) => u.update.type === 'permission_requested' && resolve(u.update.paths)),
    );
    const turnId = await startTurn(h.session, 'write');
    expect(await asked).toEqual(['drafts/a.txt']);
    await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'allow_once' });
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'completed' });
    expect((await results())[0]!.content).toBe('wrote drafts/a.txt');
  });

  it('refuses hooks that are not functions, and unknown hook names, as InvalidOptions', async () => {
    const base = { storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([]) };
    await expect(createRuntime({ ...base, hooks: { beforeToolDispatch: 'deny all' } as never })).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(createRuntime({ ...base, hooks: { onEverything: () => undefined } as never })).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(createRuntime({ ...base, agents: { default: { hooks: { timeoutMs: 0 } } } })).rejects.toMatchObject({ code: 'InvalidOptions' });
  });
});
