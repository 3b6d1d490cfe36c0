import { createActor, toPromise, waitFor, type ActorRefFrom } from 'xstate';
import type { ToolCallInput, ToolCallOutput } from '../../machines/tool-call.contract.js';
import { describe, expect, it } from 'vitest';
import { ChatStateError } from '../../src/index.js';
import { hostWithPort, toolCallStubs } from './stubs.js';
import { defaultLoopRules, FRESH_TRACKER, signatureHash, type LoopRules, type LoopTracker } from '../../machines/guardrails.js';

/** The tracker keeps a call's signature hashed (it is stored with the session, GR-2a). */
const READ_A = signatureHash('read_file:{"path":"a"}');

const input = (name: string, argumentsText: string, loop: LoopTracker = FRESH_TRACKER, loopRules: LoopRules = defaultLoopRules(3)) => ({
  sessionId: 's',
  turnId: 't',
  call: { id: 'call-1', name, argumentsText },
  loop,
  loopRules,
});

/** The chart always runs as a child (it tells its parent about approvals), so tests give it a host. */
function start(stubs: ReturnType<typeof toolCallStubs>, i: ToolCallInput) {
  const root = createActor(hostWithPort(stubs.machine, i, stubs.handlers));
  const done = toPromise(root) as Promise<ToolCallOutput>;
  root.start();
  const actor = root.getSnapshot().children.chart as ActorRefFrom<typeof stubs.machine>;
  const received = () => (root.getSnapshot().context as { received: string[] }).received.filter((t) => t.startsWith('tool.'));
  return { actor, done, received };
}

describe('tool-call chart through .provide() (RT-15)', () => {
  it('parses, resolves, validates, authorizes, executes and writes, in that order', async () => {
    const stubs = toolCallStubs();
    const { done } = start(stubs, input('read_file', '{"path":"a"}'));
    const output = await done;
    expect(output).toEqual({
      toolCallId: 'call-1',
      result: { status: 'succeeded', content: 'ran read_file' },
      termination: null,
      loop: { signature: READ_A, count: 1, recent: [], waitTimeouts: 0 },
      cleared: null,
    });
    expect(stubs.emitted).toEqual(['span', 'started', 'live:running', 'finished']);
    expect(stubs.written).toHaveLength(1);
  });

  it('writes InvalidArguments for text that is not a JSON object, before resolving the name', async () => {
    const stubs = toolCallStubs();
    const output = await start(stubs, input('nope', '[1,2]')).done;
    expect(output.result.content).toBe("InvalidArguments: the arguments of 'nope' are not a JSON object (nested at most 64 deep)");
    expect(stubs.written[0]!.result.status).toBe('failed');
  });

  it('writes ToolNotFound for an unknown name and InvalidArguments for a failed schema', async () => {
    const unknown = await start(toolCallStubs(), input('nope', '{}')).done;
    expect(unknown.result.content).toBe("ToolNotFound: no tool named 'nope' is available");
    const invalid = await start(toolCallStubs(), input('read_file', '{"path":1}')).done;
    expect(invalid.result).toEqual({ status: 'failed', content: 'InvalidArguments: path: expected string' });
  });

  it('ends the turn chat_state_error when chat state refuses the result, persistence_error when storage does (RT-9)', async () => {
    const refused = await start(toolCallStubs({ writeFails: new ChatStateError('UnmatchedToolResult', 'no open call') }), input('read_file', '{"path":"a"}')).done;
    expect(refused.termination).toEqual({ kind: 'failed', code: 'chat_state_error', message: 'the tool result could not be written: UnmatchedToolResult: no open call' });
    const lost = await start(toolCallStubs({ writeFails: new Error('disk gone') }), input('read_file', '{"path":"a"}')).done;
    expect(lost.termination).toEqual({ kind: 'failed', code: 'persistence_error', message: 'the tool result could not be written: disk gone' });
  });

  it('stops at the doom-loop threshold without authorizing or executing', async () => {
    const stubs = toolCallStubs();
    const output = await start(stubs, input('read_file', '{"path":"a"}', { signature: READ_A, count: 2, recent: [], waitTimeouts: 0 })).done;
    expect(output.termination).toMatchObject({ kind: 'failed', code: 'doom_loop' });
    expect(output.result.content).toBe("doom loop detected for tool 'read_file'");
    expect(stubs.emitted).not.toContain('live:running');
    expect(stubs.emitted).toContain('guardrail:loop:hard:3');
  });

  it('runs a call that reaches the soft threshold, announces it once and appends the hint to its result (GR-1)', async () => {
    const stubs = toolCallStubs();
    const rules = { ...defaultLoopRules(5), soft: 3 };
    const output = await start(stubs, input('read_file', '{"path":"a"}', { signature: READ_A, count: 2, recent: [], waitTimeouts: 0 }, rules)).done;
    expect(output.termination).toBeNull();
    expect(output.result.status).toBe('succeeded');
    expect(output.result.content).toMatch(/^ran read_file\n\n\[guardrail\] This is call 3 in a row of 'read_file'/);
    expect(stubs.written[0]!.result.content).toBe(output.result.content);
    expect(stubs.emitted.filter((e) => e.startsWith('guardrail'))).toEqual(['guardrail:loop:soft:3']);
    expect(stubs.emitted.indexOf('guardrail:loop:soft:3')).toBeLessThan(stubs.emitted.indexOf('live:running'));
  });

  it("screens against the session's mode: a rule denial is written, an ask waits for the user", async () => {
    const denied = toolCallStubs({ mode: 'deny' });
    const output = await start(denied, input('read_file', '{"path":"a"}')).done;
    expect(output.result).toEqual({ status: 'denied', content: "denied by rule: the session's permission mode does not allow 'read_file'" });
    expect(denied.emitted).not.toContain('live:running');

    const asked = toolCallStubs({ mode: 'ask' });
    const { actor, done } = start(asked, input('read_file', '{"path":"a"}'));
    await waitFor(actor, (s) => s.matches({ active: 'waiting_permission' }));
    actor.send({ type: 'permission.resolve', decision: 'allow_once' });
    expect((await done).result).toEqual({ status: 'succeeded', content: 'ran read_file' });
  });

  it('counts only calls whose arguments pass the schema; one that fails breaks the run (GR-1)', async () => {
    const run = { signature: READ_A, count: 2, recent: [], waitTimeouts: 0 };
    expect((await start(toolCallStubs(), input('read_file', '{"path":1}', run)).done).loop).toEqual(FRESH_TRACKER);
    expect((await start(toolCallStubs(), input('nope', '{"path":"a"}', run)).done).loop).toEqual(FRESH_TRACKER);
    expect((await start(toolCallStubs(), input('read_file', 'not json', run)).done).loop).toEqual(FRESH_TRACKER);
  });

  it('runs control tools without authorization', async () => {
    const stubs = toolCallStubs({ authorize: { decision: 'deny' } });
    const output = await start(stubs, input('update_plan', '{"path":"x"}')).done;
    expect(output.result).toEqual({ status: 'succeeded', content: 'plan stored' });
  });

  it('waits for a decision when asked, then runs with the approved paths', async () => {
    const seenPaths: string[][] = [];
    const stubs = toolCallStubs({
      authorize: { decision: 'ask', paths: ['/tmp/a'] },
      execute: async (i) => {
        seenPaths.push(i.approvedPaths);
        return { status: 'succeeded', content: 'ok' };
      },
    });
    const { actor, done, received } = start(stubs, input('read_file', '{"path":"a"}'));
    await waitFor(actor, (s) => s.matches({ active: 'waiting_permission' }));
    expect(received()).toEqual(['tool.permission_requested']);
    actor.send({ type: 'permission.resolve', decision: 'allow_once' });
    expect((await done).result).toEqual({ status: 'succeeded', content: 'ok' });
    expect(seenPaths).toEqual([['/tmp/a']]);
    expect(received()).toEqual(['tool.permission_requested', 'tool.permission_settled']);
    expect(stubs.emitted).toContain('permission_resolved:allow_once');
  });

  it('a denial, a cancel and a stop each end the turn with their own result', async () => {
    const cases = [
      { event: { type: 'permission.resolve', decision: 'deny' } as const, status: 'denied', termination: { kind: 'failed', code: 'permission_denied' } },
      { event: { type: 'tool.cancel' } as const, status: 'cancelled', termination: { kind: 'cancelled' } },
      { event: { type: 'tool.stop' } as const, status: 'outcome_unknown', termination: { kind: 'failed', code: 'actor_stopped' } },
    ];
    for (const c of cases) {
      const stubs = toolCallStubs({ authorize: { decision: 'ask' } });
      const { actor, done } = start(stubs, input('read_file', '{"path":"a"}'));
      await waitFor(actor, (s) => s.matches({ active: 'waiting_permission' }));
      actor.send(c.event);
      const output = await done;
      expect(output.result.status).toBe(c.status);
      expect(output.termination).toMatchObject(c.termination);
    }
  });

  it('a cancel while executing aborts the tool signal', async () => {
    let aborted = false;
    const stubs = toolCallStubs({
      execute: (_i, signal) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve({ status: 'succeeded', content: 'too late' });
          });
        }),
    });
    const { actor, done } = start(stubs, input('read_file', '{"path":"a"}'));
    await waitFor(actor, (s) => s.matches({ active: 'executing' }));
    actor.send({ type: 'tool.cancel' });
    const output = await done;
    expect(aborted).toBe(true);
    expect(output.result).toEqual({ status: 'cancelled', content: 'tool call cancelled by the user' });
  });
});

describe('tool-call chart: dispatch hooks and who decided (RL-4)', () => {
  it('a hook denial writes a denied result decided by the hook, and the tool never runs', async () => {
    const stubs = toolCallStubs({ beforeDispatch: { decision: 'deny', reason: 'no' } });
    const output = await start(stubs, input('read_file', '{"path":"a"}')).done;
    expect(output.result).toEqual({ status: 'denied', content: 'denied by hook: no' });
    expect(stubs.written[0]).toMatchObject({ decision: { verdict: 'denied', by: 'hook' }, hookError: null, rewritten: false });
    expect(stubs.emitted).not.toContain('live:running');
  });

  it('a rewrite goes on with the new arguments (then the mode decides); an invalid one fails the call', async () => {
    const stubs = toolCallStubs({ beforeDispatch: { decision: 'rewrite', args: { path: 'b' } }, mode: 'ask' });
    const { actor } = start(stubs, input('read_file', '{"path":"a"}'));
    await waitFor(actor, (s) => s.matches({ active: 'waiting_permission' }));
    expect(actor.getSnapshot().context).toMatchObject({ args: { path: 'b' }, rewritten: true });
    const invalid = toolCallStubs({ beforeDispatch: { decision: 'invalid_rewrite', message: 'path: expected string' } });
    const output = await start(invalid, input('read_file', '{"path":"a"}')).done;
    expect(output.result).toEqual({ status: 'failed', content: 'hook_invalid_rewrite: path: expected string' });
    expect(invalid.written[0]).toMatchObject({ hookError: 'hook_invalid_rewrite', decision: { verdict: 'denied', by: 'hook' } });
  });

  it('a failing before hook fails closed; a failing after hook withholds the result the tool produced', async () => {
    const before = toolCallStubs({ beforeDispatch: Object.assign(new Error('hook_timeout: too slow'), { code: 'hook_timeout' }) });
    expect((await start(before, input('read_file', '{"path":"a"}')).done).result).toEqual({ status: 'failed', content: 'hook_timeout: too slow' });
    expect(before.written[0]).toMatchObject({ hookError: 'hook_timeout', decision: { verdict: 'denied', by: 'hook' } });
    const after = toolCallStubs({ afterDispatch: new Error('hook_failed: scanner down') });
    const output = await start(after, input('read_file', '{"path":"a"}')).done;
    expect(output.result).toEqual({ status: 'failed', content: "hook_failed: scanner down (the tool's result, succeeded, is withheld)" });
    expect(after.written[0]).toMatchObject({ hookError: 'hook_failed', decision: null });
  });
});

describe('tool-call chart in an approval batch (issue 30)', () => {
  const held = (name: string, argumentsText: string) => ({ ...input(name, argumentsText), holdBeforeRun: true });

  it('held where it would run: nothing runs or is written, and the output says what it came to', async () => {
    const stubs = toolCallStubs();
    const output = await start(stubs, held('read_file', '{"path":"a"}')).done;
    expect(output.cleared).toEqual({ args: { path: 'a' }, approvedPaths: [], decision: null, hookError: null, rewritten: false, verdict: null, result: null, termination: null });
    expect(stubs.written).toEqual([]);
    expect(stubs.emitted).toEqual(['span', 'started']);
  });

  it('held after the user answers: an approval carries its decision, a denial its result and how it ends the turn, neither written', async () => {
    const approved = toolCallStubs({ mode: 'ask' });
    const asked = start(approved, held('read_file', '{"path":"a"}'));
    await waitFor(asked.actor, (s) => s.matches({ active: 'waiting_permission' }));
    asked.actor.send({ type: 'permission.resolve', decision: 'allow_once', principal: 'alice' });
    const allowed = await asked.done;
    expect(allowed.cleared).toMatchObject({ result: null, decision: { verdict: 'allowed', by: 'user', principal: 'alice' } });
    expect(approved.emitted).toContain('permission_resolved:allow_once');
    expect(asked.received()).toEqual(['tool.permission_requested', 'tool.permission_settled']);

    const refused = toolCallStubs({ mode: 'ask' });
    const denying = start(refused, held('read_file', '{"path":"a"}'));
    await waitFor(denying.actor, (s) => s.matches({ active: 'waiting_permission' }));
    denying.actor.send({ type: 'permission.resolve', decision: 'deny' });
    const denied = await denying.done;
    expect(denied.cleared).toMatchObject({ result: { status: 'denied', content: 'denied by the user' }, termination: { kind: 'failed', code: 'permission_denied' } });
    expect(refused.written).toEqual([]);
  });

  it('held with the result of a call screened out before its run (the mode forbids it)', async () => {
    const stubs = toolCallStubs({ mode: 'deny' });
    const output = await start(stubs, held('read_file', '{"path":"a"}')).done;
    expect(output.cleared?.result).toEqual({ status: 'denied', content: "denied by rule: the session's permission mode does not allow 'read_file'" });
    expect(stubs.written).toEqual([]);
  });

  it('taken up once its batch is cleared: it runs with the arguments it was cleared with, unscreened, or writes the result it came to', async () => {
    const runs: string[] = [];
    const stubs = toolCallStubs({ mode: 'deny', execute: async (i) => (runs.push(JSON.stringify(i.args)), { status: 'succeeded', content: 'ran' }) });
    const clearedRun = { args: { path: 'b' }, approvedPaths: ['/tmp/b'], decision: { verdict: 'allowed' as const, by: 'user' as const }, hookError: null, rewritten: false, verdict: null, result: null, termination: null };
    // The mode would deny it now: the call was cleared already, so it is not screened again.
    const ran = await start(stubs, { ...input('read_file', '{"path":"a"}'), cleared: clearedRun }).done;
    expect(ran.result).toEqual({ status: 'succeeded', content: 'ran' });
    expect(runs).toEqual(['{"path":"b"}']);
    expect(stubs.written[0]).toMatchObject({ args: { path: 'b' }, decision: { verdict: 'allowed', by: 'user' } });

    const denial = { ...clearedRun, result: { status: 'denied' as const, content: 'denied by the user' }, termination: { kind: 'failed' as const, code: 'permission_denied' as const, message: 'the user denied the tool call' } };
    const written = toolCallStubs();
    const ended = await start(written, { ...input('read_file', '{"path":"a"}'), cleared: denial }).done;
    expect(ended).toMatchObject({ result: denial.result, termination: denial.termination, cleared: null });
    expect(written.written).toHaveLength(1);
    expect(written.emitted).not.toContain('live:running');
  });
});
