import { afterEach, describe, expect, it } from 'vitest';
import { NOT_EXECUTED_RESULT_TEXT } from '../../../src/index.js';
import { harness, nextUpdate, readFileTool, startTurn, types, writeFileTool, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const write = (id: string, path: string) => ({ id, name: 'write_file', args: { path, text: 'x' } });

describe('approvals and permission modes (RT-3, RT-5, RT-16)', () => {
  it('asks with the tool paths, runs after allow_once, and the approval covers that call only', async () => {
    const log: string[] = [];
    h = await harness([{ text: 'writing', toolCalls: [write('w1', 'a.txt'), write('w2', 'b.txt')] }, { text: 'written' }], {
      tools: [writeFileTool(log)],
    });
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'write');
    const first = await asked;
    expect(first.update).toEqual({ type: 'permission_requested', toolCallId: 'w1', name: 'write_file', paths: ['a.txt'] });
    const snap = h.session.snapshot().runtime;
    expect(snap).toMatchObject({ kind: 'running', phase: 'waiting_permission', pendingApproval: { toolCallId: 'w1', paths: ['a.txt'] } });
    expect(log).toEqual([]);

    const askedAgain = nextUpdate(h.session, 'permission_requested');
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'allow_once' })).toEqual({ ok: true });
    const second = await askedAgain;
    expect(second.update).toMatchObject({ toolCallId: 'w2', paths: ['b.txt'] });
    expect(log).toEqual(['write_file a.txt approved=a.txt']);
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w2', decision: 'allow_once' })).toEqual({ ok: true });

    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'written' });
    expect(log).toEqual(['write_file a.txt approved=a.txt', 'write_file b.txt approved=b.txt']);
    expect(types(h.updates).filter((t) => t.startsWith('permission'))).toEqual([
      'permission_requested',
      'permission_resolved',
      'permission_requested',
      'permission_resolved',
    ]);
  });

  it('accepts a decision sent from inside the permission_requested subscriber', async () => {
    h = await harness([{ text: 'x', toolCalls: [write('w1', 'a.txt')] }, { text: 'done' }], { tools: [writeFileTool()] });
    const answers: Promise<unknown>[] = [];
    const session = h.session;
    session.updates$.subscribe((u) => {
      if (u.update.type === 'permission_requested') {
        answers.push(session.resolvePermission({ turnId: u.turnId, toolCallId: u.update.toolCallId, decision: 'allow_once' }));
      }
    });
    const turnId = await startTurn(session, 'write');
    expect(await session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(await Promise.all(answers)).toEqual([{ ok: true }]);
    const kinds = types(h.updates);
    expect(kinds.slice(kinds.indexOf('tool_call_started'), kinds.indexOf('tool_call_finished'))).toEqual([
      'tool_call_started',
      'phase_changed',
      'permission_requested',
      'permission_resolved',
      'phase_changed',
    ]);
  });

  it('a user denial ends the turn permission_denied; the tool never runs and later calls are cancelled in order', async () => {
    const log: string[] = [];
    h = await harness(
      [{ text: 'x', toolCalls: [write('w1', 'a.txt'), { id: 'r1', name: 'read_file', args: { path: 'r' } }, write('w3', 'c.txt')] }],
      { tools: [writeFileTool(log), readFileTool(log)] },
    );
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'write');
    await asked;
    await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'deny' });
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'permission_denied' });
    expect(log).toEqual([]);
    expect(h.model.requests).toHaveLength(1);
    const results = (await h.storage.listMessages(h.session.id)).flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));
    expect(results).toEqual([
      // The denial is stored as what ended the turn (issue 26: a host resuming the turn ends it the same way).
      {
        role: 'tool',
        toolCallId: 'w1',
        toolName: 'write_file',
        status: 'denied',
        content: 'denied by the user',
        endedTurn: { kind: 'failed', code: 'permission_denied', message: 'the user denied the tool call' },
      },
      { role: 'tool', toolCallId: 'r1', toolName: 'read_file', status: 'cancelled', content: NOT_EXECUTED_RESULT_TEXT },
      { role: 'tool', toolCallId: 'w3', toolName: 'write_file', status: 'cancelled', content: NOT_EXECUTED_RESULT_TEXT },
    ]);
  });

  it('a rule denial becomes a denied result and the turn continues', async () => {
    const log: string[] = [];
    h = await harness([{ text: 'x', toolCalls: [write('w1', '/etc/passwd')] }, { text: 'could not' }], { tools: [writeFileTool(log)] });
    const turnId = await startTurn(h.session, 'write');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'could not' });
    expect(log).toEqual([]);
    const result = h.model.requests[1]!.messages.at(-1);
    expect(result).toMatchObject({ role: 'tool', status: 'denied', content: 'denied by rule: protected path' });
  });

  it('read_only rule-denies writes; auto runs them without asking; a mode change applies from the next call', async () => {
    const log: string[] = [];
    const { defineTool } = await import('../../../src/index.js');
    const { z } = await import('zod');
    const touch = defineTool({
      name: 'touch',
      description: 'writes without its own authorize',
      effect: 'write',
      input: z.object({ n: z.number() }),
      execute: async (args) => {
        log.push(`touch ${args.n}`);
        return { status: 'succeeded', content: 'ok' };
      },
    });
    h = await harness(
      [
        { text: '1', toolCalls: [{ name: 'touch', args: { n: 1 } }] },
        { text: 'denied' },
        { text: '2', toolCalls: [{ name: 'touch', args: { n: 2 } }] },
        { text: 'ran' },
      ],
      { tools: [touch], permissionMode: 'read_only' },
    );
    let turnId = await startTurn(h.session, 'one');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'denied' });
    expect(h.model.requests[1]!.messages.at(-1)).toMatchObject({ status: 'denied' });
    expect(await h.session.setPermissionMode('auto')).toEqual({ ok: true });
    expect((await h.storage.getSession(h.session.id))?.permissionMode).toBe('auto');
    turnId = await startTurn(h.session, 'two');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'ran' });
    expect(log).toEqual(['touch 2']);
    expect(types(h.updates)).not.toContain('permission_requested');
    expect(h.session.snapshot().permissionMode).toBe('auto');
  });

  it('a mode change while a turn runs applies from the next tool call of that same turn (RT-5)', async () => {
    const log: string[] = [];
    const { defineTool } = await import('../../../src/index.js');
    const { z } = await import('zod');
    const touch = defineTool({
      name: 'touch',
      description: 'writes',
      effect: 'write',
      input: z.object({ n: z.number() }),
      execute: async (args) => {
        log.push(`touch ${args.n}`);
        return { status: 'succeeded', content: 'ok' };
      },
    });
    let changed: Promise<unknown> = Promise.resolve();
    // The first call runs in auto; while the turn is still going, the mode becomes read_only.
    const first = defineTool({
      name: 'first',
      description: 'changes the mode mid-turn',
      effect: 'write',
      input: z.object({}),
      execute: async () => {
        changed = h!.session.setPermissionMode('read_only');
        await changed;
        return { status: 'succeeded', content: 'mode changed' };
      },
    });
    h = await harness(
      [{ text: 'both', toolCalls: [{ name: 'first', args: {} }, { name: 'touch', args: { n: 1 } }] }, { text: 'after' }],
      { tools: [first, touch], permissionMode: 'auto' },
    );
    const turnId = await startTurn(h.session, 'go');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'after' });
    expect(await changed).toEqual({ ok: true });
    expect(log).toEqual([]);
    const statuses = (await h.storage.listMessages(h.session.id)).flatMap((m) => (m.message.role === 'tool' ? [`${m.message.toolName}:${m.message.status}`] : []));
    expect(statuses).toEqual(['first:succeeded', 'touch:denied']);
  });

  it('matches approvals by turn and tool call id: TurnNotActive and PermissionNotPending', async () => {
    h = await harness([{ text: 'x', toolCalls: [write('w1', 'a.txt')] }, { text: 'done' }], { tools: [writeFileTool()] });
    expect(await h.session.resolvePermission({ turnId: 'turn_nope', toolCallId: 'w1', decision: 'allow_once' })).toEqual({
      ok: false,
      error: { code: 'TurnNotActive' },
    });
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'write');
    expect(await h.session.resolvePermission({ turnId: 'turn_other', toolCallId: 'w1', decision: 'allow_once' })).toEqual({
      ok: false,
      error: { code: 'TurnNotActive' },
    });
    // The call exists but is not yet waiting for a decision.
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'allow_once' })).toEqual({
      ok: false,
      error: { code: 'PermissionNotPending' },
    });
    await asked;
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w9', decision: 'allow_once' })).toEqual({
      ok: false,
      error: { code: 'PermissionNotPending' },
    });
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'maybe' })).toMatchObject({
      ok: false,
      error: { code: 'InvalidInput' },
    });
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    // After the turn, only the stored answer given again is acknowledged (a client retrying cannot
    // know whether its first attempt was taken); another decision is still refused.
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'deny' })).toEqual({
      ok: false,
      error: { code: 'TurnNotActive' },
    });
  });

  it('the same answer given again is acknowledged while the turn goes on; another decision is refused (issue 26 retries)', async () => {
    const log: string[] = [];
    h = await harness([{ text: 'x', toolCalls: [write('w1', 'a.txt'), write('w2', 'b.txt')] }, { text: 'done' }], { tools: [writeFileTool(log)] });
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'write');
    await asked;
    const askedAgain = nextUpdate(h.session, 'permission_requested');
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'allow_once' })).toEqual({ ok: true });
    await askedAgain;
    // w2 now waits; w1's answer arrives again, as after a retry.
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'deny' })).toEqual({ ok: false, error: { code: 'PermissionNotPending' } });
    expect(log).toEqual(['write_file a.txt approved=a.txt']);
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w2', decision: 'deny' })).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'permission_denied' });
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w2', decision: 'deny' })).toEqual({ ok: true });
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w2', decision: 'allow_once' })).toEqual({ ok: false, error: { code: 'TurnNotActive' } });
    expect(log).toEqual(['write_file a.txt approved=a.txt']);
  });

  it('stopping the runtime during an approval parks the turn: nothing is written over the pending approval (issue 26)', async () => {
    h = await harness([{ text: 'x', toolCalls: [write('w1', 'a.txt')] }], { tools: [writeFileTool()] });
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'write');
    await asked;
    const outcome = h.session.waitForTurn(turnId);
    const { storage } = h;
    await h.runtime.shutdown();
    h = undefined;
    // The turn goes on, waiting for the same approval, when its session is next opened (test/runtime/durability/resume.test.ts).
    expect(await outcome).toEqual({ status: 'parked' });
    const written = storage.calls.filter((c) => !c.failed).map((c) => c.method);
    expect(written).toContain('requestApproval');
    expect(written).not.toContain('answerApproval');
    expect(written).not.toContain('endTurn');
    const results = storage.calls.filter((c) => c.method === 'appendMessage').map((c) => (c.args[0] as { message: { role: string } }).message.role);
    expect(results).not.toContain('tool');
  });
});
