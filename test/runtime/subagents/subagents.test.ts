import { afterEach, describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import {
  createRuntime,
  sqliteStorage,
  type AgentConfig,
  type ModelRequest,
  type Runtime,
  type ScriptedReply,
  type ScriptedStep,
  type SessionHandle,
  type StoredMessage,
  type UpdateEnvelope,
} from '../../../src/index.js';
import { blockingTool, readFileTool, writeFileTool } from '../../support/harness.js';
import { routedModel } from '../../support/routed-model.js';
import { ArmedClock } from '../../support/armed-clock.js';

const LEAD = 'You lead: delegate research.';
const RESEARCHER = 'You research and answer in one line.';

let runtime: Runtime | undefined;
let storage: ReturnType<typeof sqliteStorage>;
afterEach(async () => {
  await runtime?.shutdown();
  runtime = undefined;
});

const call = (name: string, args: Record<string, unknown>, id?: string) => ({ name, args, ...(id && { id }) });

/** The child's id, from the `spawn_agent` result the parent's model just saw. */
function spawnedId(request: ModelRequest): string {
  for (const message of [...request.messages].reverse()) {
    if (message.role === 'tool' && message.toolName === 'spawn_agent') return (JSON.parse(message.content) as { agentId: string }).agentId;
  }
  throw new Error('no spawn_agent result in the request');
}

/** A parent step that calls `wait_agent` on the child it spawned. */
const waitFor =
  (timeoutMs: number, id?: string): ScriptedStep =>
  (request) => ({ text: '', toolCalls: [call('wait_agent', { agentId: spawnedId(request), timeoutMs }, id)] });

/** A model step that never answers until its call is aborted. */
const hangs: ScriptedStep = () => new Promise<ScriptedReply>(() => undefined);

interface Setup {
  lead: ScriptedStep[];
  researcher: ScriptedStep[];
  agents?: Record<string, AgentConfig>;
  clock?: ArmedClock;
  tools?: Parameters<typeof createRuntime>[0]['tools'];
  inspect?: (event: InspectionEvent) => void;
}

async function setup(s: Setup) {
  const { port, requests } = routedModel({ lead: { prompt: LEAD, steps: s.lead }, researcher: { prompt: RESEARCHER, steps: s.researcher } });
  storage = sqliteStorage({ filename: ':memory:' });
  runtime = await createRuntime({
    storage,
    model: port,
    tools: s.tools ?? [readFileTool()],
    agents: {
      lead: { systemPrompt: LEAD, delegation: { agents: ['researcher'] } },
      researcher: { systemPrompt: RESEARCHER },
      ...s.agents,
    },
    ...(s.clock && { clock: s.clock }),
    ...(s.inspect && { inspect: s.inspect }),
  });
  const parent = await runtime.createSession({ agent: 'lead', permissionMode: 'ask' });
  const updates: UpdateEnvelope[] = [];
  parent.updates$.subscribe((u) => updates.push(u));
  return { runtime, parent, requests, updates };
}

async function start(session: SessionHandle, text: string): Promise<string> {
  const started = await session.startTurn({ clientRequestId: `c-${text}`, input: [{ type: 'text', text }] });
  if (!started.ok) throw new Error(JSON.stringify(started.error));
  return started.turnId;
}

async function toolResults(_rt: Runtime, sessionId: string): Promise<Extract<StoredMessage['message'], { role: 'tool' }>[]> {
  return (await storage.listMessages(sessionId)).flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));
}

async function onlyChild(rt: Runtime, parentId: string): Promise<string> {
  const { children } = await rt.agentLinks(parentId);
  expect(children).toHaveLength(1);
  return children[0]!.sessionId;
}

describe('sub-agents', () => {
  it('spawn_agent starts a linked child session at once; wait_agent returns its answer; the answer also reaches the parent mailbox before its next model call', async () => {
    const inspected = new Set<string>();
    const { runtime: rt, parent, requests } = await setup({
      lead: [
        { text: 'delegating', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'find the answer' }, 'sp1')] },
        waitFor(60_000, 'w1'),
        { text: 'the researcher says 42' },
      ],
      researcher: [{ text: 'the answer is 42' }],
      inspect: (event) => {
        if (event.type !== '@xstate.snapshot') return;
        const context = (event.snapshot as { context?: { sessionId?: unknown } }).context;
        if (typeof context?.sessionId === 'string') inspected.add(context.sessionId);
      },
    });
    const turnId = await start(parent, 'research this');
    expect(await parent.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'the researcher says 42' });

    const childId = await onlyChild(rt, parent.id);
    const links = await rt.agentLinks(parent.id);
    expect(links).toEqual({ parent: null, children: [{ sessionId: childId, agent: 'researcher', link: { sessionId: parent.id, turnId, toolCallId: 'sp1' } }] });
    expect((await rt.agentLinks(childId)).parent).toEqual({ sessionId: parent.id, turnId, toolCallId: 'sp1' });
    // The child is a session like any: its actors are seen by the runtime's inspector, its turn is stored.
    expect(inspected.has(childId)).toBe(true);
    const child = await rt.openSession(childId);
    expect(child.agent).toBe('researcher');

    const results = await toolResults(rt, parent.id);
    expect(JSON.parse(results[0]!.content)).toEqual({ agentId: childId, agent: 'researcher', status: 'running' });
    expect(JSON.parse(results[1]!.content)).toEqual({ agentId: childId, agent: 'researcher', status: 'completed', answer: 'the answer is 42' });
    // The third request (after the wait) carries the child's answer as an agent message, drained before that call.
    const third = requests.lead![2]!;
    expect(third.messages.some((m) => m.role === 'user' && m.text.includes("Sub-agent 'researcher'") && m.text.includes('the answer is 42'))).toBe(true);
    // Only the lead's model is offered the delegation tools.
    expect(requests.lead![0]!.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['spawn_agent', 'send_agent_message', 'wait_agent']));
    expect(requests.researcher![0]!.tools.map((t) => t.name)).not.toContain('spawn_agent');
  });

  it('an answer that arrives after the parent turn completed waits in the mailbox for the next user turn', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { runtime: rt, parent, requests } = await setup({
      lead: [{ text: '', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'slow work' })] }, { text: 'started it' }, { text: 'noted' }],
      researcher: [async () => (await gate, { text: 'slow answer' })],
    });
    expect(await parent.waitForTurn(await start(parent, 'go'))).toMatchObject({ status: 'completed', finalText: 'started it' });
    const child = await rt.openSession(await onlyChild(rt, parent.id));
    const childTurn = child.snapshot().runtime;
    expect(childTurn.kind).toBe('running');
    release();
    const childTurnId = (await child.acceptedTurn((await rt.agentLinks(parent.id)).children[0]!.link.toolCallId)) as { ok: true; turnId: string };
    expect(await child.waitForTurn(childTurnId.turnId)).toMatchObject({ status: 'completed', finalText: 'slow answer' });
    expect(await parent.waitForTurn(await start(parent, 'anything new?'))).toMatchObject({ status: 'completed', finalText: 'noted' });
    expect(requests.lead).toHaveLength(3);
    expect(requests.lead![2]!.messages.some((m) => m.role === 'user' && m.text.includes('slow answer'))).toBe(true);
  });

  it('wait_agent times out on the chart clock with a timeout result; the turn goes on', async () => {
    const clock = new ArmedClock();
    const { runtime: rt, parent } = await setup({
      clock,
      lead: [{ text: '', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'think hard' })] }, waitFor(1_000), { text: 'still thinking, I will check later' }],
      researcher: [hangs],
    });
    const armed = clock.armed(1_000);
    const turnId = await start(parent, 'go');
    await armed;
    clock.increment(1_000);
    expect(await parent.waitForTurn(turnId)).toMatchObject({ status: 'completed' });
    const childId = await onlyChild(rt, parent.id);
    const results = await toolResults(rt, parent.id);
    expect(results[1]).toMatchObject({ toolName: 'wait_agent', status: 'failed', content: `wait_agent timed out after 1000 ms: sub-agent ${childId} is still running` });
    // A completed parent turn leaves its child running; its answer will come through the mailbox.
    expect((await rt.openSession(childId)).snapshot().runtime.kind).toBe('running');
  });

  it('RT-14: consecutive wait_agent timeouts reaching the threshold fail the turn doom_loop, and its running child is cancelled', async () => {
    const clock = new ArmedClock();
    const { runtime: rt, parent, updates } = await setup({
      clock,
      lead: [{ text: '', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'never ends' })] }, waitFor(500), waitFor(500), waitFor(500), { text: 'unreachable' }],
      researcher: [hangs],
    });
    const turnId = await start(parent, 'go');
    for (let i = 0; i < 3; i++) {
      await clock.armed(500);
      clock.increment(500);
    }
    expect(await parent.waitForTurn(turnId)).toEqual({ status: 'failed', code: 'doom_loop', message: "'wait_agent' timed out 3 times in a row" });
    const results = await toolResults(rt, parent.id);
    expect(results.map((r) => r.status)).toEqual(['succeeded', 'failed', 'failed', 'failed']);
    expect(results[3]!.content).toBe("doom loop detected for tool 'wait_agent'");
    expect(updates.map((u) => u.update).filter((u) => u.type === 'guardrail_triggered')).toEqual([
      { type: 'guardrail_triggered', rule: 'loop', level: 'hard', toolName: 'wait_agent', count: 3 },
    ]);
    const child = await rt.openSession(await onlyChild(rt, parent.id));
    const childTurn = (await child.acceptedTurn((await rt.agentLinks(parent.id)).children[0]!.link.toolCallId)) as { ok: true; turnId: string };
    expect(await child.waitForTurn(childTurn.turnId)).toEqual({ status: 'cancelled' });
  });

  it('RT-14: identical wait_agent calls that get answers are not a doom loop, and a call between timeouts resets their count', async () => {
    const clock = new ArmedClock();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const read = { text: '', toolCalls: [call('read_file', { path: 'notes.md' })] };
    const { parent, runtime: rt } = await setup({
      clock,
      lead: [
        { text: '', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'slow' })] },
        waitFor(500),
        waitFor(500),
        read,
        waitFor(500),
        waitFor(60_000),
        waitFor(60_000),
        waitFor(60_000),
        waitFor(60_000),
        { text: 'done' },
      ],
      researcher: [async () => (await gate, { text: 'ready' })],
    });
    const turnId = await start(parent, 'go');
    for (let i = 0; i < 3; i++) {
      await clock.armed(500);
      clock.increment(500);
    }
    release();
    expect(await parent.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    const waits = (await toolResults(rt, parent.id)).filter((r) => r.toolName === 'wait_agent');
    expect(waits.map((r) => r.status)).toEqual(['failed', 'failed', 'failed', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
  });

  it('a child session is non-interactive: a call that would ask for approval is a rule denial with the reason, and its turn goes on', async () => {
    const { runtime: rt, parent } = await setup({
      tools: [readFileTool(), writeFileTool()],
      lead: [{ text: '', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'write it down' })] }, waitFor(60_000), { text: 'ok' }],
      researcher: [{ text: '', toolCalls: [call('write_file', { path: 'notes.md', text: 'x' })] }, { text: 'could not write' }],
    });
    expect(await parent.waitForTurn(await start(parent, 'go'))).toMatchObject({ status: 'completed' });
    const childId = await onlyChild(rt, parent.id);
    const [denied] = await toolResults(rt, childId);
    expect(denied).toMatchObject({
      toolName: 'write_file',
      status: 'denied',
      content: "denied by rule: 'write_file' needs an approval, and this session cannot ask for one (a sub-agent's session is non-interactive)",
    });
    const audit = (await rt.auditLog(childId)).entries;
    expect(audit[0]).toMatchObject({ toolName: 'write_file', verdict: 'denied', decidedBy: 'rule' });
    const answered = (await toolResults(rt, parent.id))[1]!;
    expect(JSON.parse(answered.content)).toMatchObject({ status: 'completed', answer: 'could not write' });
  });

  it('cancelling the parent turn cancels its running child at once: the wait ends cancelled, the child turn ends cancelled and its tool is aborted', async () => {
    const job = blockingTool();
    const { runtime: rt, parent } = await setup({
      tools: [readFileTool(), job.tool],
      lead: [{ text: '', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'work long' })] }, waitFor(3_600_000)],
      researcher: [{ text: '', toolCalls: [call('long_job', {})] }],
    });
    const turnId = await start(parent, 'go');
    await job.started;
    const childId = await onlyChild(rt, parent.id);
    expect(await parent.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await parent.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    const child = await rt.openSession(childId);
    const childTurn = (await child.acceptedTurn((await rt.agentLinks(parent.id)).children[0]!.link.toolCallId)) as { ok: true; turnId: string };
    expect(await child.waitForTurn(childTurn.turnId)).toEqual({ status: 'cancelled' });
    expect(job.seen.aborted).toBe(true);
    expect((await toolResults(rt, parent.id)).map((r) => [r.toolName, r.status])).toEqual([
      ['spawn_agent', 'succeeded'],
      ['wait_agent', 'cancelled'],
    ]);
  });

  it('bounds the live children of a turn: a spawn beyond maxChildren is a typed denial', async () => {
    const { runtime: rt, parent } = await setup({
      agents: { lead: { systemPrompt: LEAD, delegation: { agents: ['researcher'], maxChildren: 1 } } },
      lead: [
        {
          text: '',
          toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'one' }), call('spawn_agent', { agent: 'researcher', task: 'two' })],
        },
        { text: 'one is enough' },
      ],
      researcher: [hangs],
    });
    expect(await parent.waitForTurn(await start(parent, 'go'))).toMatchObject({ status: 'completed' });
    const results = await toolResults(rt, parent.id);
    expect(results[1]).toMatchObject({
      status: 'denied',
      content: 'denied by rule: ChildLimitReached: this turn already runs as many sub-agents as its agent allows; wait for one first',
    });
    expect((await rt.agentLinks(parent.id)).children).toHaveLength(1);
  });

  it('refuses an agent outside the allow-list, and a child whose agent does not allow delegation cannot delegate', async () => {
    const { runtime: rt, parent } = await setup({
      lead: [
        { text: '', toolCalls: [call('spawn_agent', { agent: 'explorer', task: 'x' }), call('spawn_agent', { agent: 'researcher', task: 'y' })] },
        waitFor(60_000),
        { text: 'done' },
      ],
      researcher: [{ text: '', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'recurse' })] }, { text: 'I cannot delegate' }],
    });
    expect(await parent.waitForTurn(await start(parent, 'go'))).toMatchObject({ status: 'completed', finalText: 'done' });
    const results = await toolResults(rt, parent.id);
    expect(results[0]).toMatchObject({ status: 'denied', content: "denied by rule: UnknownAgent: 'explorer' is not an agent this agent may delegate to" });
    const childId = await onlyChild(rt, parent.id);
    expect((await toolResults(rt, childId))[0]).toMatchObject({ status: 'denied', content: "denied by rule: this agent may not delegate ('spawn_agent')" });
    expect((await rt.agentLinks(childId)).children).toEqual([]);
  });

  it('send_agent_message writes to a running child before its next model call, and gives an idle child a new task', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const send = (text: string): ScriptedStep => (request) => ({ text: '', toolCalls: [call('send_agent_message', { agentId: spawnedId(request), text })] });
    const { runtime: rt, parent, requests } = await setup({
      lead: [
        { text: '', toolCalls: [call('spawn_agent', { agent: 'researcher', task: 'look around' })] },
        send('also check the tests'),
        (request) => (release(), { text: '', toolCalls: [call('wait_agent', { agentId: spawnedId(request), timeoutMs: 60_000 })] }),
        send('now summarize'),
        waitFor(60_000),
        { text: 'all done' },
      ],
      researcher: [async () => (await gate, { text: '', toolCalls: [call('read_file', { path: 'a' })] }), { text: 'looked' }, { text: 'summary' }],
    });
    expect(await parent.waitForTurn(await start(parent, 'go'))).toMatchObject({ status: 'completed', finalText: 'all done' });
    const texts = (await toolResults(rt, parent.id)).map((r) => r.content);
    expect(JSON.parse(texts[1]!)).toMatchObject({ delivered: 'mailbox' });
    expect(JSON.parse(texts[3]!)).toMatchObject({ delivered: 'new_turn' });
    expect(JSON.parse(texts[4]!)).toMatchObject({ status: 'completed', answer: 'summary' });
    expect(requests.researcher![1]!.messages.some((m) => m.role === 'user' && m.text === 'also check the tests')).toBe(true);
    expect(requests.researcher![2]!.messages.at(-1)).toMatchObject({ role: 'user', text: 'now summarize' });
  });
});
