import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, scriptedModel, type AnyTool, type Runtime, type ScriptedStep, type SessionStorage, type StoredMessage } from '../../../src/index.js';
import { planResumption } from '../../../src/runtime/turn-resumption.js';
import { INTERRUPTED_RESULT_TEXT } from '../../../src/protocol/messages.js';
import { crash, harness, startTurn, type Harness } from '../../support/harness.js';
import { durableTargets, sqliteFile, type DurableDatabase } from '../../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../../support/host.js';
import { until } from '../../support/poll.js';
import type { SessionHandle } from '../../../src/index.js';

/**
 * Issue 30, item 5: with `parallelToolCalls`, calls that need no approval run side by side — writes
 * and commands too, not only reads — up to the bound, and their results are still written in
 * provider order. `beforeToolDispatch` hooks no longer keep calls serial: they run per call. Calls
 * that ask for an approval are asked in provider order, every approval before any result is
 * written; each approved call starts as it is approved, beside the others (an approval batch).
 */

/** A tool of `effect` that records its runs and waits for the test to let each finish; a cancel ends it. */
function gatedTool(name: string, effect: 'read' | 'write' | 'execute') {
  const started: number[] = [];
  const argsSeen: number[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const waiters = new Map<number, () => void>();
  const startedWaiters: (() => void)[] = [];
  const tool: AnyTool = defineTool({
    name,
    description: `${effect}s slowly`,
    effect,
    input: z.object({ n: z.number() }),
    execute: ({ n }, { signal }) =>
      new Promise((resolve) => {
        started.push(n);
        argsSeen.push(n);
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        for (const wake of startedWaiters.splice(0)) wake();
        const end = (status: 'succeeded' | 'cancelled') => {
          running -= 1;
          resolve({ status, content: `${name} ${n}` });
        };
        waiters.set(n, () => end('succeeded'));
        signal.addEventListener('abort', () => end('cancelled'), { once: true });
      }),
  });
  return {
    tool,
    started,
    mostAtOnce: () => mostAtOnce,
    release: (n: number) => {
      waiters.get(n)?.();
      waiters.delete(n);
    },
    async untilStarted(count: number) {
      while (started.length < count) await new Promise<void>((resolve) => startedWaiters.push(resolve));
    },
  };
}

const calls = (name: string, ...ns: number[]) => ns.map((n) => ({ name, args: { n } }));
const resultsOf = (messages: StoredMessage[]) => messages.flatMap((m) => (m.message.role === 'tool' ? [`${m.message.toolName}:${m.message.status}:${m.message.content}`] : []));

let h: Harness | undefined;
let runtime: Runtime | undefined;
let db: DurableDatabase | undefined;
let host: TestHost | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  await runtime?.shutdown();
  await host?.close();
  await db?.drop();
  h = runtime = host = db = undefined;
});

describe.each(durableTargets)('parallel writes and commands ($name)', (target) => {
  it.skipIf(target.skip)('runs the writes and commands of one response side by side up to the bound, results in provider order', async () => {
    const writes = gatedTool('put', 'write');
    const commands = gatedTool('exec', 'execute');
    db = target.create();
    const storage: SessionStorage = db.open();
    runtime = await createRuntime({
      storage,
      model: scriptedModel([{ text: 'many', toolCalls: [...calls('put', 1, 2), ...calls('exec', 3), ...calls('put', 4)] }, { text: 'done' }]),
      tools: [writes.tool, commands.tool],
      agents: { default: { parallelToolCalls: 3 } },
    });
    const session = await runtime.createSession({ permissionMode: 'auto' });
    const turnId = await startTurn(session, 'go');
    await writes.untilStarted(2);
    await commands.untilStarted(1);
    // The bound: the fourth waits for a slot.
    expect(writes.started).toEqual([1, 2]);
    for (const n of [3]) commands.release(n);
    await writes.untilStarted(3);
    for (const n of [4, 2, 1]) writes.release(n);
    expect(await session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(writes.mostAtOnce() + commands.mostAtOnce()).toBeGreaterThanOrEqual(3);
    expect(resultsOf(await storage.listMessages(session.id))).toEqual(['put:succeeded:put 1', 'put:succeeded:put 2', 'exec:succeeded:exec 3', 'put:succeeded:put 4']);
    expect((await storage.listAudit(session.id, { limit: 10 })).map((a) => [a.toolName, a.verdict, a.decidedBy])).toEqual([
      ['put', 'allowed', 'mode'],
      ['exec', 'allowed', 'mode'],
      ['put', 'allowed', 'mode'],
      ['put', 'allowed', 'mode'],
    ]);
  });
});

describe('parallel writes: what still keeps them serial, hooks per call, and ends', () => {
  it('dispatch hooks no longer switch parallelism off: each call runs them once, before its own tool; a denial or a rewrite holds for that call alone', async () => {
    const writes = gatedTool('put', 'write');
    const hookCalls: number[] = [];
    h = await harness([{ text: 'three', toolCalls: calls('put', 1, 2, 3) }, { text: 'done' }], {
      tools: [writes.tool],
      agents: { default: { parallelToolCalls: true } },
      permissionMode: 'auto',
      hooks: {
        beforeToolDispatch: ({ args }) => {
          const n = (args as { n: number }).n;
          hookCalls.push(n);
          if (n === 2) return { decision: 'deny', reason: 'not this one' };
          if (n === 3) return { decision: 'rewrite', args: { n: 30 } };
          return undefined;
        },
      },
    });
    const turnId = await startTurn(h.session, 'go');
    await writes.untilStarted(2);
    // 1 and the rewritten 3 run at once; 2 never ran.
    expect([...writes.started].sort((a, b) => a - b)).toEqual([1, 30]);
    writes.release(30);
    writes.release(1);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(writes.mostAtOnce()).toBe(2);
    expect([...hookCalls].sort()).toEqual([1, 2, 3]);
    expect(resultsOf(await h.storage.listMessages(h.session.id))).toEqual(['put:succeeded:put 1', 'put:denied:denied by hook: not this one', 'put:succeeded:put 30']);
    const audit = (await h.runtime.auditLog(h.session.id)).entries.reverse();
    expect(audit.map((a) => [a.verdict, a.decidedBy, a.dispatchedArgumentsHash === null])).toEqual([
      ['allowed', 'mode', true],
      ['denied', 'hook', true],
      ['allowed', 'mode', false],
    ]);
  });

  it('a cancel while writes run side by side: what finished says so, what was still running is `outcome_unknown`, never "not executed"', async () => {
    const writes = gatedTool('put', 'write');
    h = await harness([{ text: 'three', toolCalls: calls('put', 1, 2, 3) }], { tools: [writes.tool], agents: { default: { parallelToolCalls: true } }, permissionMode: 'auto' });
    const turnId = await startTurn(h.session, 'go');
    await writes.untilStarted(3);
    writes.release(3);
    // The released run settles in microtasks: they all run before the next turn of the event loop, so the cancel comes after it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'cancelled' });
    const results = resultsOf(await h.storage.listMessages(h.session.id)).map((r) => r.split(':').slice(0, 2).join(':'));
    expect(results).toEqual(['put:cancelled', 'put:outcome_unknown', 'put:succeeded']);
  });
});

describe.each(durableTargets)('parallel writes: a host that went away ($name)', (target) => {
  it.skipIf(target.skip)('writes that ran side by side when their host went away get their `interrupted` results after the restart, and neither runs twice', async () => {
    db = target.create();
    const log: string[] = [];
    const ran: Promise<void>[] = [];
    const hanging = (name: string) => {
      let started: () => void = () => undefined;
      ran.push(new Promise<void>((resolve) => (started = resolve)));
      return defineTool({
        name,
        description: 'writes once and never returns, like a process killed inside it',
        effect: 'write',
        input: z.object({}),
        execute: () => {
          log.push(name);
          started();
          return new Promise<never>(() => undefined);
        },
      });
    };
    const tools = [hanging('deploy_a'), hanging('deploy_b')];
    const agents = { default: { parallelToolCalls: true } };
    const first = await createRuntime({
      storage: db.open(),
      resumeTurns: true,
      model: scriptedModel([{ text: 'both', toolCalls: [{ id: 'a-1', name: 'deploy_a', args: {} }, { id: 'b-1', name: 'deploy_b', args: {} }] }]),
      tools,
      agents,
    });
    const session = await first.createSession({ permissionMode: 'auto' });
    const turnId = await startTurn(session, 'deploy both');
    await Promise.all(ran);
    crash(first);
    const model = scriptedModel([{ text: 'neither is repeated' }]);
    runtime = await createRuntime({ storage: db.open(), resumeTurns: true, model, tools, agents });
    const reopened = await runtime.openSession(session.id);
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'neither is repeated' });
    expect(log).toEqual(['deploy_a', 'deploy_b']);
    expect(model.requests[0]!.messages.filter((m) => m.role === 'tool').map((m) => [(m as { toolCallId: string }).toolCallId, (m as { status: string }).status])).toEqual([
      ['a-1', 'interrupted'],
      ['b-1', 'interrupted'],
    ]);
    await first.shutdown().catch(() => undefined);
  });
});

describe('parallel writes: resuming a turn whose host went away', () => {
  const response = (ids: string[]): StoredMessage => ({
    id: 'm1',
    sessionId: 's',
    turnId: 't',
    sequence: 1,
    createdAtMs: 0,
    message: { role: 'assistant', text: '', reasoning: '', toolCalls: ids.map((id) => ({ id, name: id.startsWith('w') ? 'put' : 'read', argumentsText: '{}' })) },
  });
  const repeatable = (call: { name: string }) => call.name === 'read';

  it('with parallel calls on, every call up to the last write that may have run ahead gets its `interrupted` result; off, only the first can have run', () => {
    const messages = [response(['w1', 'r2', 'w3', 'r4'])];
    const parallel = planResumption(messages, 't', () => false, repeatable, true);
    expect(parallel.interrupted.map((c) => c.id)).toEqual(['w1', 'r2', 'w3']);
    expect(parallel.point.toolIndex).toBe(3);
    const serial = planResumption(messages, 't', () => false, repeatable, false);
    expect(serial.interrupted.map((c) => c.id)).toEqual(['w1']);
    expect(serial.point.toolIndex).toBe(1);
    // A write that needed an approval it never got did not run, ahead or not.
    const asked = planResumption(messages, 't', (call) => call.id === 'w3', repeatable, true);
    expect(asked.interrupted.map((c) => c.id)).toEqual(['w1']);
    expect(planResumption([response(['r1', 'r2'])], 't', () => false, repeatable, true).interrupted).toEqual([]);
  });
});

describe('parallel writes over HTTP', () => {
  it('a turn posted over HTTP runs its writes side by side and stores their results in provider order', async () => {
    db = sqliteFile();
    let running = 0;
    let mostAtOnce = 0;
    const slowWrite = defineTool({
      name: 'put',
      description: 'writes slowly',
      effect: 'write',
      input: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        await new Promise((resolve) => setTimeout(resolve, 30 - n * 5));
        running -= 1;
        return { status: 'succeeded', content: `put ${n}` };
      },
    });
    const steps: ScriptedStep[] = [{ text: 'writing', toolCalls: calls('put', 1, 2, 3, 4) }, { text: 'written' }];
    host = await testHost(db, steps, { runtime: { tools: [slowWrite], agents: { default: { parallelToolCalls: true } } } });
    const id = await newSession(host, { permissionMode: 'auto' });
    const turn = await postTurn(host, id, 'h1');
    expect(await finished(host, id, turn.body.turnId as string)).toMatchObject({ status: 'completed' });
    expect(mostAtOnce).toBe(4);
    const audit = await host.call('GET', `/sessions/${id}/audit`);
    expect((audit.body.entries as { toolName: string; verdict: string }[]).map((e) => `${e.toolName}:${e.verdict}`)).toEqual(Array(4).fill('put:allowed'));
    const messages = await host.storage.listMessages(id);
    expect(resultsOf(messages)).toEqual(['put:succeeded:put 1', 'put:succeeded:put 2', 'put:succeeded:put 3', 'put:succeeded:put 4']);
  });
});

/** The next approval the session asks for, in the order asked: its call id once `permission_requested` goes out. */
function approvals(session: SessionHandle) {
  const asked: string[] = [];
  const waiting: (() => void)[] = [];
  /** Each call's `tool_call_started` and `tool_call_finished`, in order. */
  const lifecycle: string[] = [];
  const sub = session.updates$.subscribe((u) => {
    if (u.update.type === 'tool_call_started' || u.update.type === 'tool_call_finished') lifecycle.push(`${u.update.type}:${u.update.toolCallId}`);
    if (u.update.type !== 'permission_requested') return;
    asked.push(u.update.toolCallId);
    for (const wake of waiting.splice(0)) wake();
  });
  return {
    asked,
    lifecycle,
    async nth(n: number): Promise<string> {
      while (asked.length < n) await new Promise<void>((resolve) => waiting.push(resolve));
      return asked[n - 1]!;
    },
    stop: () => sub.unsubscribe(),
  };
}

describe.each(durableTargets)('approval batches: every approval first, then the approved calls side by side ($name)', (target) => {
  const open = async (steps: ScriptedStep[], tools: AnyTool[]) => {
    db = target.create();
    const storage = db.open();
    runtime = await createRuntime({ storage, model: scriptedModel(steps), tools, agents: { default: { parallelToolCalls: true } } });
    const session = await runtime.createSession({ permissionMode: 'ask' });
    return { storage, session };
  };

  /** Three writes in one response; the first is approved and running, the second is being asked about. */
  const firstOfThreeRunning = async () => {
    const writes = gatedTool('put', 'write');
    const { storage, session } = await open([{ text: 'three', toolCalls: calls('put', 1, 2, 3) }], [writes.tool]);
    const asked = approvals(session);
    const turnId = await startTurn(session, 'go');
    await session.resolvePermission({ turnId, toolCallId: await asked.nth(1), decision: 'allow_once' });
    await writes.untilStarted(1);
    return { writes, storage, session, asked, turnId };
  };

  it.skipIf(target.skip)('asks for each write in provider order; each starts once approved, beside the others; results and audit rows in provider order', async () => {
    const writes = gatedTool('put', 'write');
    const reads = gatedTool('look', 'read');
    const { storage, session } = await open([{ text: 'three', toolCalls: [...calls('put', 1), ...calls('look', 2), ...calls('put', 3)] }, { text: 'done' }], [writes.tool, reads.tool]);
    const asked = approvals(session);
    const turnId = await startTurn(session, 'go');
    const put1 = await asked.nth(1);
    expect(writes.started).toEqual([]);
    expect(await session.resolvePermission({ turnId, toolCallId: put1, decision: 'allow_once' })).toEqual({ ok: true });
    // Approved, the write starts; the read after it needs no approval and starts too; then the second write is asked about.
    await writes.untilStarted(1);
    await reads.untilStarted(1);
    const put3 = await asked.nth(2);
    expect(resultsOf(await storage.listMessages(session.id))).toEqual([]);
    expect(await session.resolvePermission({ turnId, toolCallId: put3, decision: 'allow_once' })).toEqual({ ok: true });
    await writes.untilStarted(2);
    expect(writes.mostAtOnce()).toBe(2);
    // They finish out of order; the results are written in the provider's.
    writes.release(3);
    reads.release(2);
    writes.release(1);
    expect(await session.waitForTurn(turnId)).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(asked.asked).toEqual([put1, put3]);
    expect(resultsOf(await storage.listMessages(session.id))).toEqual(['put:succeeded:put 1', 'look:succeeded:look 2', 'put:succeeded:put 3']);
    const audit = (await runtime!.auditLog(session.id)).entries.reverse();
    expect(audit.map((a) => [a.toolName, a.verdict, a.decidedBy, a.permissionWaitMs !== null, a.executionMs !== null])).toEqual([
      ['put', 'allowed', 'user', true, true],
      ['look', 'allowed', 'mode', false, true],
      ['put', 'allowed', 'user', true, true],
    ]);
    // Each call started and finished once, though its chart was taken up again after the batch was cleared.
    const ids = (await storage.listMessages(session.id)).flatMap((m) => (m.message.role === 'tool' ? [m.message.toolCallId] : []));
    expect([...asked.lifecycle].sort()).toEqual(ids.flatMap((c) => [`tool_call_finished:${c}`, `tool_call_started:${c}`]).sort());
    asked.stop();
  });

  it.skipIf(target.skip)('a denial ends the turn: what was approved before it still ran, the denial is written in its place, the calls after it never run', async () => {
    const { writes, storage, session, asked, turnId } = await firstOfThreeRunning();
    await session.resolvePermission({ turnId, toolCallId: await asked.nth(2), decision: 'deny' });
    writes.release(1);
    expect(await session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'permission_denied' });
    expect(writes.started).toEqual([1]);
    expect(asked.asked).toHaveLength(2);
    const results = resultsOf(await storage.listMessages(session.id)).map((r) => r.split(':').slice(0, 2).join(':'));
    expect(results).toEqual(['put:succeeded', 'put:denied', 'put:cancelled']);
    asked.stop();
  });

  it.skipIf(target.skip)('a cancel while the second approval waits: the approved write that is running is stopped and says `outcome_unknown`; the rest never ran', async () => {
    const { writes, storage, session, asked, turnId } = await firstOfThreeRunning();
    await asked.nth(2);
    expect(await session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await session.waitForTurn(turnId)).toMatchObject({ status: 'cancelled' });
    expect(writes.started).toEqual([1]);
    const results = resultsOf(await storage.listMessages(session.id)).map((r) => r.split(':').slice(0, 2).join(':'));
    expect(results).toEqual(['put:outcome_unknown', 'put:cancelled', 'put:cancelled']);
    // The held calls' starts went out as they were screened; the skip adds only their finishes.
    expect(asked.lifecycle.filter((l) => l.startsWith('tool_call_started'))).toHaveLength(3);
    expect(asked.lifecycle.filter((l) => l.startsWith('tool_call_finished'))).toHaveLength(3);
    asked.stop();
  });
});

describe.each(durableTargets)('approval batches: a host that went away ($name)', (target) => {
  it.skipIf(target.skip)('the approved write that started is `interrupted` after the restart and never runs twice; the approval still pending is asked again', async () => {
    db = target.create();
    const log: string[] = [];
    let started: () => void = () => undefined;
    const ran = new Promise<void>((resolve) => (started = resolve));
    const deploy = defineTool({
      name: 'deploy',
      description: 'deploys once and never returns, like a process killed inside it',
      effect: 'write',
      input: z.object({ to: z.string() }),
      execute: ({ to }) => {
        log.push(to);
        started();
        return new Promise<never>(() => undefined);
      },
    });
    const agents = { default: { parallelToolCalls: true } };
    const response = { text: 'both', toolCalls: [{ id: 'd-1', name: 'deploy', args: { to: 'eu' } }, { id: 'd-2', name: 'deploy', args: { to: 'us' } }] };
    const first = await createRuntime({ storage: db.open(), resumeTurns: true, model: scriptedModel([response]), tools: [deploy], agents });
    const session = await first.createSession({ permissionMode: 'ask' });
    const asked = approvals(session);
    const turnId = await startTurn(session, 'deploy both');
    await session.resolvePermission({ turnId, toolCallId: await asked.nth(1), decision: 'allow_once' });
    await ran;
    expect(await asked.nth(2)).toBe('d-2');
    crash(first);
    asked.stop();

    const model = scriptedModel([{ text: 'eu may have deployed; us was denied' }]);
    const storage2 = db.open();
    runtime = await createRuntime({ storage: storage2, resumeTurns: true, model, tools: [deploy], agents });
    const reopened = await runtime.openSession(session.id);
    await until('the second approval to be asked again', () => {
      const live = reopened.snapshot().runtime;
      return live.kind === 'running' && live.pendingApproval?.toolCallId === 'd-2';
    });
    expect(await reopened.resolvePermission({ turnId, toolCallId: 'd-2', decision: 'deny' })).toEqual({ ok: true });
    expect(await reopened.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'permission_denied' });
    expect(log).toEqual(['eu']);
    const results = resultsOf(await storage2.listMessages(session.id));
    expect(results).toEqual([`deploy:cancelled:${INTERRUPTED_RESULT_TEXT}`, 'deploy:denied:denied by the user']);
    await first.shutdown().catch(() => undefined);
  });
});

describe.each(durableTargets)('approval batches over HTTP ($name)', (target) => {
  it.skipIf(target.skip)('two writes posted over HTTP are approved through the API one after the other and run side by side', async () => {
    db = target.create();
    const writes = gatedTool('put', 'write');
    host = await testHost(db, [{ text: 'writing', toolCalls: calls('put', 1, 2) }, { text: 'written' }], {
      runtime: { tools: [writes.tool], agents: { default: { parallelToolCalls: true } } },
    });
    const id = await newSession(host, { permissionMode: 'ask' });
    const turnId = (await postTurn(host, id, 'h1')).body.turnId as string;
    const pending = async (): Promise<string | null> => {
      const { body } = await host!.call('GET', `/sessions/${id}`);
      return (body.runtime as { pendingApproval?: { toolCallId: string } | null }).pendingApproval?.toolCallId ?? null;
    };
    const answered: string[] = [];
    for (let n = 1; n <= 2; n++) {
      let callId: string | null = null;
      await until(`approval ${n} to be pending`, async () => {
        callId = await pending();
        return callId !== null && !answered.includes(callId);
      });
      expect((await host.call('POST', `/sessions/${id}/turns/${turnId}/permissions/${callId!}`, { decision: 'allow_once' })).status).toBe(200);
      answered.push(callId!);
      await writes.untilStarted(n);
    }
    expect(writes.mostAtOnce()).toBe(2);
    writes.release(2);
    writes.release(1);
    expect(await finished(host, id, turnId)).toMatchObject({ status: 'completed' });
    expect(resultsOf(await host.storage.listMessages(id))).toEqual(['put:succeeded:put 1', 'put:succeeded:put 2']);
    const audit = await host.call('GET', `/sessions/${id}/audit`);
    expect((audit.body.entries as { decidedBy: string }[]).map((e) => e.decidedBy)).toEqual(['user', 'user']);
  });
});
