import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type AgentConfig, type ModelRequest, type Runtime, type ScriptedStep, type SessionStorage, type UpdateEnvelope } from '../../../src/index.js';
import { readFileTool, runTurn, writeFileTool } from '../../support/harness.js';
import { routedModel } from '../../support/routed-model.js';
import { durableTargets, sqliteFile, type DurableDatabase } from '../../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../../support/host.js';

/**
 * Issue 30, item 3: `switch_agent` inside a run. The model calls it; after the allow-list and
 * policy checks of the tool-call chart, the turn's next model call is the new agent's — its prompt,
 * tools and model — behind a `system_reminder` that names the switch.
 */

const WRITER = 'You write.';
const REVIEWER = 'You review.';
const EXPLORER = 'You explore.';

const agents: Record<string, AgentConfig> = {
  writer: { systemPrompt: WRITER, switchTo: ['reviewer'] },
  // Only reads, and one model call per turn: the switched turn keeps the writer's limits (it makes two
  // calls); the next turn shows the reviewer's took over.
  reviewer: { systemPrompt: REVIEWER, tools: ['read_file'], maxModelCalls: 1 },
  explorer: { systemPrompt: EXPLORER },
};

const switchTo = (agent: string, reason?: string): ScriptedStep => ({ text: '', toolCalls: [{ name: 'switch_agent', args: { agent, ...(reason && { reason }) } }] });
const toolNames = (request: ModelRequest) => request.tools.map((t) => t.name);
const lastUserText = (request: ModelRequest) => {
  const last = request.messages.at(-1)!;
  return last.role === 'user' ? last.text : '';
};

let runtime: Runtime | undefined;
let db: DurableDatabase | undefined;
let host: TestHost | undefined;
afterEach(async () => {
  await runtime?.shutdown();
  await host?.close();
  await db?.drop();
  runtime = host = db = undefined;
});

async function open(target: (typeof durableTargets)[number], scripts: Parameters<typeof routedModel>[0], options: { agents?: Record<string, AgentConfig>; permissions?: Record<string, 'deny' | 'ask' | 'allow'> } = {}) {
  db = target.create();
  const storage: SessionStorage = db.open();
  const { port, requests } = routedModel(scripts);
  runtime = await createRuntime({ storage, model: port, tools: [readFileTool(), writeFileTool()], agents: options.agents ?? agents, ...(options.permissions && { permissions: options.permissions }) });
  return { storage, requests, runtime };
}

describe.each(durableTargets)('agent.switch inside a run ($name)', (target) => {
  it.skipIf(target.skip)('switches within the turn: the next model call has the new prompt and tools behind a system_reminder; stored, announced, audited', async () => {
    const { storage, requests } = await open(target, {
      writer: { prompt: WRITER, steps: [switchTo('reviewer', 'the draft is done')] },
      reviewer: { prompt: REVIEWER, steps: [{ text: 'reviewed' }, { text: '', toolCalls: [{ name: 'read_file', args: { path: 'a' } }] }] },
    });
    const session = await runtime!.createSession({ agent: 'writer' });
    const updates: UpdateEnvelope[] = [];
    session.updates$.subscribe((u) => updates.push(u));

    const { turnId, outcome } = await runTurn(session, 'draft, then hand over');
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'reviewed' });

    // The writer was offered the switch; the reviewer (no `switchTo`) is not, and gets only its own tools.
    const [asWriter] = requests.writer!;
    expect(toolNames(asWriter!)).toContain('switch_agent');
    const [asReviewer] = requests.reviewer!;
    expect(asReviewer!.system[0]!.content).toContain(REVIEWER);
    expect(asReviewer!.system[0]!.content).not.toContain(WRITER);
    expect(toolNames(asReviewer!)).toContain('read_file');
    expect(toolNames(asReviewer!)).not.toContain('write_file');
    expect(toolNames(asReviewer!)).not.toContain('switch_agent');
    // The reminder comes after the call's result (a call and its result stay together) and names the switch.
    expect(asReviewer!.messages.at(-2)).toMatchObject({ role: 'tool', toolName: 'switch_agent' });
    expect(lastUserText(asReviewer!)).toContain('<system_reminder>');
    expect(lastUserText(asReviewer!)).toContain("from agent 'writer' to agent 'reviewer'");
    expect(lastUserText(asReviewer!)).toContain('the draft is done');

    expect(session.agent).toBe('reviewer');
    expect((await storage.getSession(session.id))?.agent).toBe('reviewer');
    const stored = await storage.listMessages(session.id);
    const result = stored.find((m) => m.message.role === 'tool')!.message;
    expect(result).toMatchObject({ role: 'tool', toolName: 'switch_agent', status: 'succeeded' });
    expect(JSON.parse((result as { content: string }).content)).toEqual({ agent: 'reviewer', previous: 'writer', switched: true });
    expect(stored.find((m) => m.message.role === 'user' && m.message.kind === 'agent_note')?.turnId).toBe(turnId);

    // The update the run-event mapping turns into the seed's `agent.switch`.
    const switched = updates.find((u) => u.update.type === 'agent_switched');
    expect(switched).toMatchObject({ turnId, update: { type: 'agent_switched', from: 'writer', to: 'reviewer', reason: 'the draft is done' } });
    const audit = await storage.listAudit(session.id, { limit: 10 });
    expect(audit).toEqual([expect.objectContaining({ toolName: 'switch_agent', verdict: 'allowed', status: 'succeeded' })]);

    // The next turn runs the reviewer with its own limits: one model call, which asks for a tool, is all it may make.
    const next = await runTurn(session, 'again');
    expect(next.outcome).toMatchObject({ status: 'failed', code: 'max_model_calls' });
  });

  it.skipIf(target.skip)('refuses a target outside the allow-list, and one a permission rule denies; the turn goes on as the same agent', async () => {
    const { storage, requests } = await open(
      target,
      {
        writer: { prompt: WRITER, steps: [switchTo('explorer'), switchTo('reviewer'), { text: 'still the writer' }] },
        reviewer: { prompt: REVIEWER, steps: [] },
        explorer: { prompt: EXPLORER, steps: [] },
      },
      { permissions: { switch_agent: 'deny' } },
    );
    const session = await runtime!.createSession({ agent: 'writer' });
    const { outcome } = await runTurn(session, 'try to switch');
    expect(outcome).toMatchObject({ status: 'completed', finalText: 'still the writer' });
    const results = (await storage.listMessages(session.id)).flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));
    expect(results.map((r) => [r.status, r.content])).toEqual([
      ['denied', "denied by rule: this agent may not switch to 'explorer'"],
      ['denied', "denied by the permission rule 'switch_agent: deny'"],
    ]);
    expect(session.agent).toBe('writer');
    expect((await storage.getSession(session.id))?.agent).toBe('writer');
    expect(requests.writer).toHaveLength(3);
    expect(requests.reviewer).toHaveLength(0);
    expect(requests.explorer).toHaveLength(0);
  });
});

describe('agent.switch inside a run: agents without targets, and sub-agents', () => {
  it('an agent without `switchTo` is not offered the tool, and a call of it anyway is denied', async () => {
    const { storage, requests } = await open(durableTargets[0]!, {
      explorer: { prompt: EXPLORER, steps: [switchTo('writer'), { text: 'explored' }] },
    });
    const session = await runtime!.createSession({ agent: 'explorer' });
    expect((await runTurn(session, 'go')).outcome).toMatchObject({ status: 'completed', finalText: 'explored' });
    expect(toolNames(requests.explorer![0]!)).not.toContain('switch_agent');
    const result = (await storage.listMessages(session.id)).find((m) => m.message.role === 'tool')!.message;
    expect(result).toMatchObject({ status: 'denied', content: "denied by rule: this agent may not switch to 'writer'" });
  });

  const LEAD = 'You lead.';
  const MIDDLE = 'You are in the middle.';
  const LEAF = 'You are a leaf.';
  const spawnStep: ScriptedStep = { text: '', toolCalls: [{ name: 'spawn_agent', args: { agent: 'middle', task: 'delegate further' } }] };

  it.each([
    { nested: false, offered: false, status: 'denied' },
    { nested: true, offered: true, status: 'succeeded' },
  ])('a sub-agent may not delegate further unless its agent says `nested` (nested: $nested)', async ({ nested, offered, status }) => {
    let middleDone!: () => void;
    const middleFinished = new Promise<void>((resolve) => (middleDone = resolve));
    const { storage, requests } = await open(
      durableTargets[0]!,
      {
        lead: { prompt: LEAD, steps: [spawnStep, { text: 'spawned' }] },
        middle: {
          prompt: MIDDLE,
          steps: [
            { text: '', toolCalls: [{ name: 'spawn_agent', args: { agent: 'leaf', task: 'leaf work' } }] },
            () => {
              middleDone();
              return { text: 'middle answer' };
            },
          ],
        },
        leaf: { prompt: LEAF, steps: [{ text: 'leaf answer' }] },
      },
      {
        agents: {
          lead: { systemPrompt: LEAD, delegation: { agents: ['middle'] } },
          middle: { systemPrompt: MIDDLE, delegation: { agents: ['leaf'], nested } },
          leaf: { systemPrompt: LEAF },
        },
      },
    );
    const session = await runtime!.createSession({ agent: 'lead' });
    expect((await runTurn(session, 'go')).outcome).toMatchObject({ status: 'completed' });
    await middleFinished;
    // As the top of its tree, `middle` would be offered `spawn_agent`; as a sub-agent only with `nested`.
    expect(toolNames(requests.middle![0]!).includes('spawn_agent')).toBe(offered);
    const { children } = await runtime!.agentLinks(session.id);
    const middleId = children[0]!.sessionId;
    const results = (await storage.listMessages(middleId)).flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));
    expect(results[0]).toMatchObject({ toolName: 'spawn_agent', status });
    if (!nested) expect(results[0]!.content).toBe("denied by rule: this agent may not delegate ('spawn_agent')");
  });

  it('a top-level session of an agent with delegation is still offered the delegation tools', async () => {
    const { requests } = await open(
      durableTargets[0]!,
      { middle: { prompt: MIDDLE, steps: [{ text: 'done' }] } },
      { agents: { middle: { systemPrompt: MIDDLE, delegation: { agents: ['leaf'] } }, leaf: { systemPrompt: LEAF } } },
    );
    const session = await runtime!.createSession({ agent: 'middle' });
    await runTurn(session, 'go');
    expect(toolNames(requests.middle![0]!)).toContain('spawn_agent');
  });
});

describe('agent.switch inside a run over HTTP', () => {
  it('a turn posted over HTTP switches agents midway; the session, its audit log and the answer say so', async () => {
    db = sqliteFile();
    const { port, requests } = routedModel({
      writer: { prompt: WRITER, steps: [switchTo('reviewer')] },
      reviewer: { prompt: REVIEWER, steps: [{ text: 'reviewed over http' }] },
    });
    host = await testHost(db, port, { runtime: { agents } });
    const id = await newSession(host, { agent: 'writer' });
    const turn = await postTurn(host, id, 'h1');
    expect(turn.status).toBe(202);
    expect(await finished(host, id, turn.body.turnId as string)).toMatchObject({ status: 'completed', outcome: { finalText: 'reviewed over http' } });
    expect(requests.reviewer).toHaveLength(1);
    const listed = await host.call('GET', '/sessions');
    expect((listed.body.sessions as { sessionId: string; agent: string }[]).find((s) => s.sessionId === id)).toMatchObject({ agent: 'reviewer' });
    const audit = await host.call('GET', `/sessions/${id}/audit`);
    expect(audit.body).toMatchObject({ entries: [{ toolName: 'switch_agent', verdict: 'allowed', status: 'succeeded' }] });
  });
});
