import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { defineTool, type ModelCallOptions, type ScriptedReply, type StoredMessage } from '../../../src/index.js';
import { harness, nextUpdate, startTurn, writeFileTool, type Harness } from '../../support/harness.js';

/**
 * The no-progress watchdog (issue 12): a turn with no update for `stallTimeoutMs` fails `stalled`,
 * cancelling what runs. The charts run on XState's `SimulatedClock`: time passes only when a test
 * says so, and never by waiting.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const STALL = 30_000;
const guarded = { default: { guardrails: { stallTimeoutMs: STALL } } };

/** A model call that hangs without closing until its signal aborts; `started` resolves when it is called. */
function hangingModelStep() {
  let called!: (signal: AbortSignal) => void;
  const started = new Promise<AbortSignal>((resolve) => (called = resolve));
  const step = (_request: unknown, options: ModelCallOptions) => {
    called(options.signal);
    return new Promise<ScriptedReply>(() => undefined);
  };
  return { step, started };
}

/** A tool that never returns unless aborted; it reports progress when told to. */
function hangingTool() {
  let running!: (ctx: { signal: AbortSignal; progress: (p: unknown) => void }) => void;
  const started = new Promise<{ signal: AbortSignal; progress: (p: unknown) => void }>((resolve) => (running = resolve));
  const tool = defineTool({
    name: 'long_job',
    description: 'Never returns by itself',
    effect: 'read',
    input: z.object({}),
    execute: (_args, ctx) =>
      new Promise((resolve) => {
        running({ signal: ctx.signal, progress: ctx.progress });
        ctx.signal.addEventListener('abort', () => resolve({ status: 'cancelled', content: 'stopped' }));
      }),
  });
  return { tool, started };
}

describe('the no-progress watchdog', () => {
  it('fails a turn whose model stream hangs without closing: stalled, the model call aborted', async () => {
    const clock = new SimulatedClock();
    const model = hangingModelStep();
    h = await harness([model.step], { clock, agents: guarded });
    const turnId = await startTurn(h.session, 'go');
    const signal = await model.started;
    clock.increment(STALL - 1);
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running' });
    clock.increment(1);
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'failed', code: 'stalled', message: `the turn made no progress for ${STALL} ms` });
    expect(signal.aborted).toBe(true);
    expect(await h.storage.getTurn(turnId)).toMatchObject({ status: 'failed', errorCode: 'stalled' });
  });

  it('fails a turn whose tool never returns: stalled, the tool aborted, its call answered', async () => {
    const clock = new SimulatedClock();
    const job = hangingTool();
    h = await harness([{ text: 'working', toolCalls: [{ name: 'long_job', args: {}, id: 'job' }] }], { clock, tools: [job.tool], agents: guarded });
    const turnId = await startTurn(h.session, 'go');
    const run = await job.started;
    clock.increment(STALL);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'stalled' });
    expect(run.signal.aborted).toBe(true);
    const stored: StoredMessage[] = await h.storage.listMessages(h.session.id);
    expect(stored.at(-1)?.message).toMatchObject({ role: 'tool', toolCallId: 'job', status: 'cancelled', content: 'tool call cancelled: the turn made no progress for too long' });
  });

  it('every update is progress: a tool that reports progress is not stalled', async () => {
    const clock = new SimulatedClock();
    const job = hangingTool();
    h = await harness([{ text: 'working', toolCalls: [{ name: 'long_job', args: {} }] }], { clock, tools: [job.tool], agents: guarded });
    const turnId = await startTurn(h.session, 'go');
    const run = await job.started;
    for (let i = 0; i < 5; i++) {
      clock.increment(STALL - 1);
      run.progress({ done: i });
    }
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running' });
    // Then silence: it stalls a full timeout after the last progress.
    clock.increment(STALL - 1);
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running' });
    clock.increment(1);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'stalled' });
  });

  it('waiting for the user is not a stall: the watchdog pauses until the approval', async () => {
    const clock = new SimulatedClock();
    h = await harness([{ text: 'writing', toolCalls: [{ name: 'write_file', args: { path: 'n.txt', text: 'x' }, id: 'w' }] }, { text: 'written' }], {
      clock,
      tools: [writeFileTool()],
      agents: guarded,
    });
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'go');
    await asked;
    clock.increment(STALL * 10);
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running', phase: 'waiting_permission' });
    await h.session.resolvePermission({ turnId, toolCallId: 'w', decision: 'allow_once' });
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'completed', finalText: 'written' });
  });

  it('is off by default: no timer is armed, a hanging model waits for a cancel', async () => {
    const clock = new SimulatedClock();
    const model = hangingModelStep();
    h = await harness([model.step], { clock });
    const turnId = await startTurn(h.session, 'go');
    await model.started;
    clock.increment(10 * 60_000);
    expect(h.session.snapshot().runtime).toMatchObject({ kind: 'running' });
    await h.session.cancelTurn(turnId);
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'cancelled' });
  });
});
