import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type AnyTool, type StoredMessage } from '../../../src/index.js';
import { harness, nextUpdate, startTurn, writeFileTool, type Harness } from '../../support/harness.js';

/** Read tools that record when each call starts and ends, and wait for the test to let them finish. */
function gatedReads() {
  const started: number[] = [];
  const finished: number[] = [];
  const aborted: number[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const waiters = new Map<number, (() => void)[]>();
  const startedWaiters: (() => void)[] = [];
  const tool: AnyTool = defineTool({
    name: 'read',
    description: 'reads slowly',
    effect: 'read',
    input: z.object({ n: z.number() }),
    execute: ({ n }, { signal }) =>
      new Promise((resolve) => {
        started.push(n);
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        for (const wake of startedWaiters.splice(0)) wake();
        const end = (status: 'succeeded' | 'cancelled') => {
          running -= 1;
          (status === 'cancelled' ? aborted : finished).push(n);
          resolve({ status, content: `read ${n}` });
        };
        waiters.set(n, [...(waiters.get(n) ?? []), () => end('succeeded')]);
        signal.addEventListener('abort', () => end('cancelled'), { once: true });
      }),
  });
  return {
    tool,
    started,
    finished,
    aborted,
    mostAtOnce: () => mostAtOnce,
    /** Lets every started call of `n` finish. */
    release: (n: number) => {
      for (const finish of waiters.get(n) ?? []) finish();
      waiters.delete(n);
    },
    /** Resolves once `count` calls have started. */
    async untilStarted(count: number) {
      while (started.length < count) await new Promise<void>((resolve) => startedWaiters.push(resolve));
    },
  };
}

const reads = (...ns: number[]) => ns.map((n) => ({ name: 'read', args: { n } }));
const resultsOf = (messages: StoredMessage[]) => messages.flatMap((m) => (m.message.role === 'tool' ? [`${m.message.toolName}:${m.message.status}:${m.message.content}`] : []));

describe('parallel tool calls (RL-5)', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.runtime.shutdown();
    h = undefined;
  });

  it('runs the reads of one response side by side, and writes their results in provider order', async () => {
    const gated = gatedReads();
    h = await harness([{ text: 'four reads', toolCalls: reads(1, 2, 3, 4) }, { text: 'done' }], {
      tools: [gated.tool],
      agents: { default: { parallelToolCalls: true } },
    });
    const turnId = await startTurn(h.session, 'go');
    await gated.untilStarted(4);
    expect(gated.finished).toEqual([]);
    // Finishing out of order changes nothing about the order results are stored and sent in.
    for (const n of [4, 2, 3, 1]) gated.release(n);
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(resultsOf(await h.storage.listMessages(h.session.id))).toEqual(['read:succeeded:read 1', 'read:succeeded:read 2', 'read:succeeded:read 3', 'read:succeeded:read 4']);
    const second = h.model.requests[1]!.messages.filter((m) => m.role === 'tool');
    expect(second.map((m) => (m as { content: string }).content)).toEqual(['read 1', 'read 2', 'read 3', 'read 4']);
  });

  it('keeps to its bound, and runs everything one at a time when parallel calls are off (the default)', async () => {
    const bounded = gatedReads();
    h = await harness([{ text: 'six', toolCalls: reads(1, 2, 3, 4, 5, 6) }, { text: 'done' }], {
      tools: [bounded.tool],
      agents: { default: { parallelToolCalls: 2 } },
    });
    let turnId = await startTurn(h.session, 'go');
    for (let n = 1; n <= 6; n++) {
      await bounded.untilStarted(Math.min(n + 1, 6));
      bounded.release(n);
    }
    await h.session.waitForTurn(turnId);
    expect(bounded.mostAtOnce()).toBe(2);
    await h.runtime.shutdown();

    const serial = gatedReads();
    h = await harness([{ text: 'three', toolCalls: reads(1, 2, 3) }, { text: 'done' }], { tools: [serial.tool] });
    turnId = await startTurn(h.session, 'go');
    for (let n = 1; n <= 3; n++) {
      await serial.untilStarted(n);
      expect(serial.started).toEqual([1, 2, 3].slice(0, n));
      serial.release(n);
    }
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(serial.mostAtOnce()).toBe(1);
  });

  it('keeps approvals serial: reads after a call that asks wait for its answer', async () => {
    const gated = gatedReads();
    h = await harness([{ text: 'mixed', toolCalls: [...reads(1, 2), { name: 'write_file', args: { path: 'a', text: 'x' } }, ...reads(3, 4)] }, { text: 'done' }], {
      tools: [gated.tool, writeFileTool()],
      agents: { default: { parallelToolCalls: true } },
      permissionMode: 'ask',
    });
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'go');
    await gated.untilStarted(2);
    gated.release(1);
    gated.release(2);
    const request = await asked;
    // Reads 3 and 4 come after the approval: nothing of them ran while it was pending.
    expect(gated.started).toEqual([1, 2]);
    const { toolCallId } = request.update as { toolCallId: string };
    await h.session.resolvePermission({ turnId, toolCallId, decision: 'allow_once' });
    await gated.untilStarted(4);
    gated.release(3);
    gated.release(4);
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(resultsOf(await h.storage.listMessages(h.session.id)).map((r) => r.split(':').slice(0, 2).join(':'))).toEqual([
      'read:succeeded',
      'read:succeeded',
      'write_file:succeeded',
      'read:succeeded',
      'read:succeeded',
    ]);
  });

  it('lets a cancel reach every running read; each call still gets exactly one result, in order', async () => {
    const gated = gatedReads();
    h = await harness([{ text: 'four reads', toolCalls: reads(1, 2, 3, 4) }], { tools: [gated.tool], agents: { default: { parallelToolCalls: true } } });
    const turnId = await startTurn(h.session, 'go');
    await gated.untilStarted(4);
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect([...gated.aborted].sort()).toEqual([1, 2, 3, 4]);
    const results = resultsOf(await h.storage.listMessages(h.session.id));
    expect(results.map((r) => r.split(':')[1])).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
  });

  it('counts the doom loop in provider order: the call that reaches the threshold never runs', async () => {
    const gated = gatedReads();
    h = await harness([{ text: 'same thrice', toolCalls: reads(7, 7, 7, 8) }], { tools: [gated.tool], agents: { default: { parallelToolCalls: true, doomLoopThreshold: 3 } } });
    const turnId = await startTurn(h.session, 'go');
    await gated.untilStarted(2);
    gated.release(7);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'doom_loop' });
    expect(gated.started).toEqual([7, 7]);
    expect(resultsOf(await h.storage.listMessages(h.session.id)).map((r) => r.split(':')[1])).toEqual(['succeeded', 'succeeded', 'failed', 'cancelled']);
  });

  it('a read whose schema throws, in a run, crashes only its own call, as without parallel calls: the turn fails typed and every call gets its result', async () => {
    const gated = gatedReads();
    const exploding = defineTool({
      name: 'exploding',
      description: 'a read whose schema throws while it checks the arguments',
      effect: 'read',
      input: z.object({ n: z.number() }).refine(() => {
        throw new Error('the tool schema threw');
      }),
      execute: () => ({ status: 'succeeded', content: 'never' }),
    });
    h = await harness([{ text: 'two', toolCalls: [...reads(1), { name: 'exploding', args: { n: 2 } }] }], {
      tools: [gated.tool, exploding],
      agents: { default: { parallelToolCalls: true } },
    });
    const turnId = await startTurn(h.session, 'go');
    await gated.untilStarted(1);
    gated.release(1);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'tool_call_crashed' });
    expect(resultsOf(await h.storage.listMessages(h.session.id)).map((r) => r.split(':').slice(0, 2).join(':'))).toEqual(['read:succeeded', 'exploding:cancelled']);
  });

  it('never starts a read the turn gave up on while it waited for a slot', async () => {
    const gated = gatedReads();
    h = await harness([{ text: 'four reads', toolCalls: reads(1, 2, 3, 4) }], { tools: [gated.tool], agents: { default: { parallelToolCalls: 2 } } });
    const turnId = await startTurn(h.session, 'go');
    await gated.untilStarted(2);
    // The cancel stops read 1 with its call, which lets read 3 take its slot; skipping calls 2 to 4
    // then aborts reads 2 and 3 and read 4, which still waits: the end of read 2 must not start it.
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(gated.started).toEqual([1, 2, 3]);
    expect([...gated.aborted].sort()).toEqual([1, 2, 3]);
    expect(resultsOf(await h.storage.listMessages(h.session.id)).map((r) => r.split(':')[1])).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
  });
});
