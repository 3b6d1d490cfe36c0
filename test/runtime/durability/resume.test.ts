import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, defineTool, INTERRUPTED_RESULT_TEXT, scriptedModel, type AnyTool, type Runtime, type RuntimeOptions, type UpdateEnvelope } from '../../../src/index.js';
import { durableTargets, type DurableDatabase } from '../../support/databases.js';
import { crash, startTurn } from '../../support/harness.js';
import { until } from '../../support/poll.js';
import { withFaults } from '../../../storage/faulty-storage.js';

/**
 * Issue 26: a turn whose host went away goes on under its own id when its session is next opened.
 * "Host went away" is `crash()` (the first runtime stops holding its leases and never writes again)
 * or a shutdown; test/reliability/ kills real processes.
 */

/** A tool whose side effect happens and which then never returns, like a process killed inside it. */
function hangingTool(name: string, effect: 'read' | 'write', log: string[], idempotent?: boolean) {
  let started: () => void = () => undefined;
  const ran = new Promise<void>((r) => (started = r));
  let hang = true;
  const tool = defineTool({
    name,
    description: `${effect}s once per call`,
    effect,
    ...(idempotent !== undefined && { idempotent }),
    input: z.object({}),
    execute: () => {
      log.push(name);
      started();
      if (hang) return new Promise<never>(() => undefined);
      return { status: 'succeeded', content: `${name} done` };
    },
  });
  return { tool, ran, stopHanging: () => (hang = false) };
}

describe.each(durableTargets)('durable turns on $name (issue 26)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const r of runtimes.splice(0)) await r.shutdown().catch(() => undefined);
    await db?.drop();
  });

  /** The runtime that goes away: resuming turns, on the test's database. */
  async function firstRuntime(model: ReturnType<typeof scriptedModel>, tools: AnyTool[], options: Partial<RuntimeOptions> = {}): Promise<Runtime> {
    const runtime = await createRuntime({ storage: db!.open(), resumeTurns: true, model, tools, ...options });
    runtimes.push(runtime);
    return runtime;
  }

  async function restartAfter(first: Runtime, options: Omit<Parameters<typeof createRuntime>[0], 'storage'>): Promise<{ runtime: Runtime; storage: ReturnType<DurableDatabase['open']> }> {
    crash(first);
    const storage = db!.open();
    const runtime = await createRuntime({ ...options, storage, resumeTurns: true });
    runtimes.push(runtime);
    return { runtime, storage };
  }

  it.skipIf(skip)('a non-idempotent call cut short gets its interrupted result, never runs twice, and the turn completes under its own id', async () => {
    db = create();
    const log: string[] = [];
    const deploy = hangingTool('deploy', 'write', log);
    const first = await firstRuntime(scriptedModel([{ text: 'deploying', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]), [deploy.tool]);
    const session = await first.createSession({ permissionMode: 'auto' });
    const turnId = await startTurn(session, 'deploy it');
    await deploy.ran;

    const model = scriptedModel([{ text: 'the deploy may or may not have happened; I will not repeat it' }]);
    const { runtime: second, storage } = await restartAfter(first, { model, tools: [deploy.tool] });
    // The restarted runtime opened the session by itself and went on with the turn.
    const reopened = await second.openSession(session.id);
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'the deploy may or may not have happened; I will not repeat it' });
    expect(log).toEqual(['deploy']);
    expect(await storage.getTurn(turnId)).toMatchObject({ status: 'completed' });
    const request = model.requests[0]!;
    const tool = request.messages.find((m) => m.role === 'tool');
    expect(tool).toEqual({ role: 'tool', toolCallId: 'dep-1', toolName: 'deploy', status: 'interrupted', content: INTERRUPTED_RESULT_TEXT });
    // The interrupted result is stored, with an audit row saying why.
    const audit = await second.auditLog(session.id);
    expect(audit.entries.map((e) => [e.toolCallId, e.status, e.errorCode])).toEqual([['dep-1', 'cancelled', 'process_restart']]);
  });

  it.skipIf(skip)('an idempotent call runs again', async () => {
    db = create();
    const log: string[] = [];
    const lookup = hangingTool('lookup', 'read', log);
    const first = await firstRuntime(scriptedModel([{ text: 'looking', toolCalls: [{ id: 'look-1', name: 'lookup', args: {} }] }]), [lookup.tool]);
    const session = await first.createSession({ permissionMode: 'auto' });
    const turnId = await startTurn(session, 'look it up');
    await lookup.ran;
    lookup.stopHanging();

    const model = scriptedModel([{ text: 'found it' }]);
    const { runtime: second } = await restartAfter(first, { model, tools: [lookup.tool] });
    const reopened = await second.openSession(session.id);
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'found it' });
    expect(log).toEqual(['lookup', 'lookup']);
    expect(model.requests[0]!.messages.find((m) => m.role === 'tool')).toMatchObject({ toolCallId: 'look-1', status: 'success', content: 'lookup done' });
  });

  it.skipIf(skip)('a model call in flight is made again', async () => {
    db = create();
    let calls = 0;
    const first = await firstRuntime(
      scriptedModel([
        () => {
          calls += 1;
          return new Promise<never>(() => undefined);
        },
      ]),
      [],
    );
    const session = await first.createSession({ permissionMode: 'auto' });
    const turnId = await startTurn(session, 'hello');
    await until('the model call is under way', () => calls === 1);
    const model = scriptedModel([{ text: 'hello again' }]);
    const { runtime: second } = await restartAfter(first, { model });
    const reopened = await second.openSession(session.id);
    const updates: UpdateEnvelope[] = [];
    reopened.updates$.subscribe((u) => updates.push(u));
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'hello again' });
    expect(model.requests).toHaveLength(1);
  });

  it.skipIf(skip)('a pending approval survives the host: reopened waiting for the same call, answered there, the tool runs once', async () => {
    db = create();
    const log: string[] = [];
    const deploy = hangingTool('deploy', 'write', log);
    deploy.stopHanging();
    const first = await firstRuntime(scriptedModel([{ text: 'asking', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]), [deploy.tool]);
    const session = await first.createSession({ permissionMode: 'ask' });
    const turnId = await startTurn(session, 'deploy it');
    await until('the approval is pending', () => (session.snapshot().runtime as { pendingApproval?: unknown }).pendingApproval != null);

    const model = scriptedModel([{ text: 'deployed' }]);
    const { runtime: second, storage } = await restartAfter(first, { model, tools: [deploy.tool] });
    // Nobody opened it: all it waits for is a human.
    expect(await storage.getTurn(turnId)).toMatchObject({ status: 'running' });
    expect(await storage.unheldSessionsWithWork()).toEqual([]);
    const reopened = await second.openSession(session.id);
    const updates: UpdateEnvelope[] = [];
    reopened.updates$.subscribe((u) => updates.push(u));
    // Answered at once, before the resumed call has asked again: the answer waits for it.
    expect(await reopened.resolvePermission({ turnId, toolCallId: 'dep-1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'deployed' });
    expect(log).toEqual(['deploy']);
    // The call asked again and was answered with the answer held for it, once.
    expect(updates.filter((u) => u.update.type === 'permission_resolved').map((u) => u.update)).toEqual([{ type: 'permission_resolved', toolCallId: 'dep-1', decision: 'allow_once' }]);
    expect((await storage.listApprovals(turnId)).map((a) => [a.toolCallId, a.decision])).toEqual([['dep-1', 'allow_once']]);
  });

  it.skipIf(skip)('a reopened approval shows as pending in the snapshot with its call id', async () => {
    db = create();
    const deploy = hangingTool('deploy', 'write', []);
    const first = await firstRuntime(scriptedModel([{ text: 'asking', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]), [deploy.tool]);
    const session = await first.createSession({ permissionMode: 'ask' });
    const turnId = await startTurn(session, 'deploy it');
    await until('the approval is pending', () => (session.snapshot().runtime as { pendingApproval?: unknown }).pendingApproval != null);
    const { runtime: second } = await restartAfter(first, { model: scriptedModel([{ text: 'denied, so I stop' }]), tools: [deploy.tool] });
    const reopened = await second.openSession(session.id);
    const updates: UpdateEnvelope[] = [];
    reopened.updates$.subscribe((u) => updates.push(u));
    // From the opening's first snapshot on, not only once the resumed call has asked again.
    const pending = { toolCallId: 'dep-1', name: 'deploy', paths: [] };
    const waiting = [{ toolCallId: 'dep-1', name: 'deploy', status: 'waiting_permission' }];
    expect(reopened.snapshot().runtime).toMatchObject({ kind: 'running', turnId, phase: 'waiting_permission', pendingApproval: pending, toolCalls: waiting });
    // The call asks again: the same call, shown once.
    await until('the call to have asked again', () => updates.some((u) => u.update.type === 'permission_requested'));
    expect(reopened.snapshot().runtime).toMatchObject({ kind: 'running', turnId, phase: 'waiting_permission', pendingApproval: pending, toolCalls: waiting });
    expect(await reopened.resolvePermission({ turnId, toolCallId: 'dep-1', decision: 'deny' })).toEqual({ ok: true });
    expect(await reopened.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'permission_denied' });
  });

  it.skipIf(skip)('a session waiting only for an approval is parked when idle (no memory, no lease) and reopened by the answer', async () => {
    db = create();
    const log: string[] = [];
    const deploy = hangingTool('deploy', 'write', log);
    deploy.stopHanging();
    const storage = db.open();
    const runtime = await createRuntime({
      storage,
      resumeTurns: true,
      idleTtlMs: 1,
      model: scriptedModel([{ text: 'asking', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }, { text: 'deployed' }]),
      tools: [deploy.tool],
    });
    runtimes.push(runtime);
    const session = await runtime.createSession({ permissionMode: 'ask' });
    const turnId = await startTurn(session, 'deploy it');
    await until('the session to be parked', () => !runtime.isOpen(session.id));
    expect(await storage.getTurn(turnId)).toMatchObject({ status: 'running' });
    expect((await storage.sessionStanding(session.id))?.holder).toBeNull();
    expect(await storage.unheldSessionsWithWork()).toEqual([]);

    const reopened = await runtime.openSession(session.id);
    expect(await reopened.resolvePermission({ turnId, toolCallId: 'dep-1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'deployed' });
    expect(log).toEqual(['deploy']);
  });

  it.skipIf(skip)("an approval past the agent's approvalTimeoutMs is denied with a reason", async () => {
    db = create();
    const log: string[] = [];
    const deploy = hangingTool('deploy', 'write', log);
    const runtime = await firstRuntime(scriptedModel([{ text: 'asking', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]), [deploy.tool], { agents: { default: { approvalTimeoutMs: 50 } } });
    const session = await runtime.createSession({ permissionMode: 'ask' });
    const turnId = await startTurn(session, 'deploy it');
    expect(await session.waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'permission_denied', message: 'the approval request expired without an answer' });
    expect(log).toEqual([]);
    const audit = await runtime.auditLog(session.id);
    expect(audit.entries.map((e) => [e.status, e.decidedBy])).toEqual([['denied', 'timeout']]);
  });

  it.skipIf(skip)('a turn whose cancel was accepted is not resumed: it ends cancelled', async () => {
    db = create();
    const deploy = hangingTool('deploy', 'write', []);
    // The cancel is taken, but the turn's end never reaches storage: the host dies with the row still running.
    const faulty = withFaults(db.open());
    faulty.failAlways('endTurn');
    const first = await firstRuntime(scriptedModel([{ text: 'deploying', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]), [deploy.tool], { storage: faulty });
    const session = await first.createSession({ permissionMode: 'auto' });
    const turnId = await startTurn(session, 'deploy it');
    await deploy.ran;
    expect(await session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    await until('the cancel to be stored', async () => (await faulty.getTurn(turnId))?.cancelRequestedAtMs !== undefined);
    expect(await faulty.getTurn(turnId)).toMatchObject({ status: 'running' });

    const model = scriptedModel([]);
    const { storage } = await restartAfter(first, { model, tools: [deploy.tool] });
    expect(await storage.getTurn(turnId)).toMatchObject({ status: 'cancelled' });
    expect(model.requests).toHaveLength(0);
  });

  it.skipIf(skip)('a denial whose result was stored but not the turn end: the turn ends permission_denied, with no model call', async () => {
    db = create();
    const log: string[] = [];
    const deploy = hangingTool('deploy', 'write', log);
    // The denial's result reaches storage; the turn's end never does: the host dies between the two.
    const faulty = withFaults(db.open());
    faulty.failAlways('endTurn');
    const first = await firstRuntime(scriptedModel([{ text: 'asking', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]), [deploy.tool], { storage: faulty });
    const session = await first.createSession({ permissionMode: 'ask' });
    const turnId = await startTurn(session, 'deploy it');
    await until('the approval is pending', () => (session.snapshot().runtime as { pendingApproval?: unknown }).pendingApproval != null);
    expect(await session.resolvePermission({ turnId, toolCallId: 'dep-1', decision: 'deny' })).toEqual({ ok: true });
    await until('the denial to be stored', async () => (await faulty.listMessages(session.id)).some((m) => m.message.role === 'tool'));
    expect(await faulty.getTurn(turnId)).toMatchObject({ status: 'running' });

    const model = scriptedModel([{ text: 'this reply must never be asked for' }]);
    const { runtime: second, storage } = await restartAfter(first, { model, tools: [deploy.tool] });
    expect(await storage.getTurn(turnId)).toMatchObject({ status: 'failed', errorCode: 'permission_denied', errorMessage: 'the user denied the tool call' });
    expect(await (await second.openSession(session.id)).waitForTurn(turnId)).toMatchObject({ status: 'failed', code: 'permission_denied' });
    expect(model.requests).toHaveLength(0);
    expect(log).toEqual([]);
  });

  it.skipIf(skip)('a host that lost its lease mid-turn announces no end of its own: its waiters are told parked, and the new owner ends the turn', async () => {
    db = create();
    const log: string[] = [];
    let finish: () => void = () => undefined;
    const gate = new Promise<void>((r) => (finish = r));
    let started: () => void = () => undefined;
    const ran = new Promise<void>((r) => (started = r));
    const deploy = defineTool({
      name: 'deploy',
      description: 'deploys, slowly',
      effect: 'write',
      input: z.object({}),
      execute: async () => {
        log.push('deploy');
        started();
        await gate;
        return { status: 'succeeded', content: 'deployed' };
      },
    });
    const first = await firstRuntime(scriptedModel([{ text: 'deploying', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }, { text: 'never asked' }]), [deploy]);
    const session = await first.createSession({ permissionMode: 'auto' });
    const seen: UpdateEnvelope[] = [];
    session.updates$.subscribe((u) => seen.push(u));
    const turnId = await startTurn(session, 'deploy it');
    await ran;

    // The first host stalls past its lease; the second takes the session over and ends the turn.
    const model = scriptedModel([{ text: 'the deploy may have happened; not repeating it' }]);
    const { runtime: second, storage } = await restartAfter(first, { model, tools: [deploy] });
    expect(await (await second.openSession(session.id)).waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'the deploy may have happened; not repeating it' });

    // The stalled host wakes: its result and its turn's end are fenced out, and it says nothing of an end.
    finish();
    expect(await session.waitForTurn(turnId)).toEqual({ status: 'parked' });
    expect(seen.filter((u) => u.update.type === 'turn_finished')).toEqual([]);
    expect(await storage.getTurn(turnId)).toMatchObject({ status: 'completed' });
    expect(log).toEqual(['deploy']);
  });

  it.skipIf(skip)('an agent with resume: false keeps the old way: the turn ends interrupted', async () => {
    db = create();
    const log: string[] = [];
    const deploy = hangingTool('deploy', 'write', log);
    const agents = { default: { resume: false } };
    const first = await firstRuntime(scriptedModel([{ text: 'deploying', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]), [deploy.tool], { agents });
    const session = await first.createSession({ permissionMode: 'auto' });
    const turnId = await startTurn(session, 'deploy it');
    await deploy.ran;
    const model = scriptedModel([]);
    const { storage } = await restartAfter(first, { model, tools: [deploy.tool], agents });
    expect(await storage.getTurn(turnId)).toMatchObject({ status: 'interrupted', errorCode: 'process_restart' });
    expect(model.requests).toHaveLength(0);
  });
});
