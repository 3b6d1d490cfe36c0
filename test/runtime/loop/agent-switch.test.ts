import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, sqliteStorage, type Runtime } from '../../../src/index.js';
import { runTurn, startTurn } from '../../support/harness.js';
import { routedModel } from '../../support/routed-model.js';
import { sqliteFile } from '../../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../../support/host.js';

const WRITER = 'You write.';
const REVIEWER = 'You review, in one tool call at most.';

let runtime: Runtime | undefined;
let host: TestHost | undefined;
afterEach(async () => {
  await runtime?.shutdown();
  await host?.close();
  runtime = host = undefined;
});

const agents = {
  writer: { systemPrompt: WRITER, switchTo: ['reviewer'] },
  // One model call only: a turn that asks for a tool then fails max_model_calls, which shows the limits moved too.
  reviewer: { systemPrompt: REVIEWER, maxModelCalls: 1 },
};

describe('agent.switch', () => {
  it('switches the agent from the next turn on — prompt, limits, tools — stored on the session with a note in the conversation', async () => {
    const { port, requests } = routedModel({
      writer: { prompt: WRITER, steps: [{ text: 'drafted' }] },
      reviewer: { prompt: REVIEWER, steps: [{ text: '', toolCalls: [{ name: 'update_plan', args: { steps: [] } }] }] },
    });
    const storage = sqliteStorage({ filename: ':memory:' });
    runtime = await createRuntime({ storage, model: port, agents });
    const session = await runtime.createSession({ agent: 'writer' });
    expect((await runTurn(session, 'draft it')).outcome).toMatchObject({ status: 'completed', finalText: 'drafted' });

    expect(await session.switchAgent('reviewer')).toEqual({ ok: true, agent: 'reviewer' });
    expect(session.agent).toBe('reviewer');
    expect((await storage.getSession(session.id))?.agent).toBe('reviewer');
    const note = (await storage.listMessages(session.id)).at(-1)!;
    expect(note.message).toEqual({ role: 'user', kind: 'agent_note', text: "The session's agent changed from 'writer' to 'reviewer': from here on you act as 'reviewer'." });

    const { outcome } = await runTurn(session, 'review it');
    expect(outcome).toMatchObject({ status: 'failed', code: 'max_model_calls' });
    const review = requests.reviewer![0]!;
    expect(review.system[0]!.content).toContain(REVIEWER);
    expect(review.messages.some((m) => m.role === 'user' && m.text.includes("from 'writer' to 'reviewer'"))).toBe(true);
  });

  it('refuses an unknown agent, one outside the allow-list, bad input, and a switch while a turn runs', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { port } = routedModel({ writer: { prompt: WRITER, steps: [async () => (await gate, { text: 'done' })] }, reviewer: { prompt: REVIEWER, steps: [] } });
    runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: port, agents });
    const session = await runtime.createSession({ agent: 'writer' });
    expect(await session.switchAgent('nobody')).toEqual({ ok: false, error: { code: 'UnknownAgent', message: "no agent named 'nobody'" } });
    expect(await session.switchAgent('explorer')).toEqual({
      ok: false,
      error: { code: 'AgentSwitchNotAllowed', message: "agent 'writer' may not switch to 'explorer'" },
    });
    expect(await session.switchAgent(42)).toMatchObject({ ok: false, error: { code: 'InvalidInput' } });
    expect(await session.switchAgent('writer')).toEqual({ ok: true, agent: 'writer' });
    const turnId = await startTurn(session, 'go');
    expect(await session.switchAgent('reviewer')).toEqual({ ok: false, error: { code: 'SessionActive' } });
    release();
    expect(await session.waitForTurn(turnId)).toMatchObject({ status: 'completed' });
    expect(await session.switchAgent('reviewer')).toEqual({ ok: true, agent: 'reviewer' });
    // A session with no turn yet has no conversation to note it in; the reviewer may not switch back.
    expect(await session.switchAgent('writer')).toMatchObject({ ok: false, error: { code: 'AgentSwitchNotAllowed' } });
  });

  it('refuses agents that name unknown agents for delegation or a switch when the runtime is made', async () => {
    const { port } = routedModel({ writer: { prompt: WRITER, steps: [] } });
    await expect(createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: port, agents: { writer: { switchTo: ['ghost'] } } })).rejects.toMatchObject({
      code: 'InvalidOptions',
    });
    await expect(
      createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: port, agents: { writer: { delegation: { agents: ['ghost'] } } } }),
    ).rejects.toMatchObject({ code: 'InvalidOptions' });
  });

  it('PUT /sessions/:id/agent switches over HTTP and answers typed errors; the switch survives reopening the session', async () => {
    const db = sqliteFile();
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'turnchart-switch-'));
    const { port } = routedModel({ writer: { prompt: WRITER, steps: [{ text: 'drafted' }] }, reviewer: { prompt: REVIEWER, steps: [{ text: 'reviewed' }] } });
    host = await testHost(db, port, { runtime: { agents }, workspace });
    const id = await newSession(host, { agent: 'writer' });
    const turn = await postTurn(host, id, 'r1');
    expect(await finished(host, id, turn.body.turnId as string)).toMatchObject({ status: 'completed' });
    expect(await host.call('PUT', `/sessions/${id}/agent`, { agent: 'ghost' })).toMatchObject({ status: 400, body: { error: { code: 'UnknownAgent' } } });
    expect(await host.call('PUT', `/sessions/${id}/agent`, { agent: 'explorer' })).toMatchObject({ status: 409, body: { error: { code: 'AgentSwitchNotAllowed' } } });
    expect(await host.call('PUT', `/sessions/${id}/agent`, { name: 'reviewer' })).toMatchObject({ status: 400, body: { error: { code: 'InvalidInput' } } });
    expect(await host.call('PUT', `/sessions/${id}/agent`, { agent: 'reviewer' })).toEqual({ status: 200, body: { ok: true, agent: 'reviewer' } });
    await host.close();
    host = await testHost(db, port, { runtime: { agents }, workspace });
    const again = await postTurn(host, id, 'r2');
    expect(await finished(host, id, again.body.turnId as string)).toMatchObject({ status: 'completed', outcome: { finalText: 'reviewed' } });
    await host.close();
    host = undefined;
    await rm(workspace, { recursive: true, force: true });
    await db.drop();
  });
});
