import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createRuntime,
  defineTool,
  scriptedModel,
  sqliteStorage,
  type AnyTool,
  type Runtime,
  type SessionHandle,
  type SessionStorage,
  type ToolSource,
} from '../../../src/index.js';
import { contextLimits } from '../../../src/context/limits.js';
import { readFileTool, runTurn, writeFileTool } from '../../support/harness.js';

/** Issue 24: each agent's own model and tool list, and tools whose list changes while the runtime runs. */

let runtime: Runtime | undefined;
let storage: SessionStorage;
afterEach(async () => {
  await runtime?.shutdown();
  runtime = undefined;
});

/** A tool source whose list the test changes, telling its listeners as an MCP client does on `tools/list_changed`. */
class ChangingSource implements ToolSource {
  readonly name = 'test:changing';
  private list: AnyTool[] = [];
  readonly listeners = new Set<() => void>();

  tools(): readonly AnyTool[] {
    return this.list;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  set(tools: AnyTool[]): void {
    this.list = tools;
    for (const listener of this.listeners) listener();
  }
}

function echoTool(name: string, ran: string[] = []): AnyTool {
  return defineTool({
    name,
    description: `the ${name} tool`,
    effect: 'read',
    input: z.object({}),
    execute: () => {
      ran.push(name);
      return { status: 'succeeded', content: `${name} ran` };
    },
  });
}

async function toolResults(session: SessionHandle) {
  return (await storage.listMessages(session.id)).flatMap((m) => (m.message.role === 'tool' ? [{ name: m.message.toolName, status: m.message.status, content: m.message.content }] : []));
}

const names = (tools: readonly { name: string }[]) => tools.map((t) => t.name);

describe("each agent's own model (issue 24)", () => {
  it("sends each session's calls to its agent's model, the runtime's by default, and a switch changes it from the next turn on", async () => {
    const shared = scriptedModel([{ text: 'shared 1' }, { text: 'shared 2' }]);
    const writerModel = scriptedModel([{ text: 'writer 1' }]);
    const reviewerModel = scriptedModel([{ text: 'reviewer 1' }, { text: 'reviewer 2' }], { capabilities: { contextWindow: 64_000 } });
    storage = sqliteStorage({ filename: ':memory:' });
    runtime = await createRuntime({
      storage,
      model: shared,
      agents: {
        writer: { systemPrompt: 'You write.', model: writerModel, switchTo: ['reviewer'] },
        reviewer: { systemPrompt: 'You review.', model: reviewerModel },
      },
    });
    const writer = await runtime.createSession({ agent: 'writer' });
    const reviewer = await runtime.createSession({ agent: 'reviewer' });
    const plain = await runtime.createSession({ agent: 'default' });

    expect((await runTurn(writer, 'draft')).outcome).toMatchObject({ finalText: 'writer 1' });
    expect((await runTurn(reviewer, 'review')).outcome).toMatchObject({ finalText: 'reviewer 1' });
    expect((await runTurn(plain, 'hello')).outcome).toMatchObject({ finalText: 'shared 1' });
    expect([shared.requests.length, writerModel.requests.length, reviewerModel.requests.length]).toEqual([1, 1, 1]);

    expect(await writer.switchAgent('reviewer')).toEqual({ ok: true, agent: 'reviewer' });
    expect((await runTurn(writer, 'now review')).outcome).toMatchObject({ finalText: 'reviewer 2' });
    expect([shared.requests.length, writerModel.requests.length, reviewerModel.requests.length]).toEqual([1, 1, 2]);
    // The context preview works out the budget with the session's model now: the reviewer's window.
    expect((await runtime.inspectContextWindow(writer.id)).autoCompactTokenLimit).toBe(contextLimits(reviewerModel.capabilities).autoCompactTokenLimit);
    expect((await runtime.inspectContextWindow(plain.id)).autoCompactTokenLimit).toBe(contextLimits(shared.capabilities).autoCompactTokenLimit);
    expect(reviewerModel.capabilities.contextWindow).not.toBe(shared.capabilities.contextWindow);
  });

  it('refuses an agent model that is no ModelPort: InvalidOptions', async () => {
    storage = sqliteStorage({ filename: ':memory:' });
    const agents = { broken: { model: { capabilities: {} } as never } };
    await expect(createRuntime({ storage, model: scriptedModel([]), agents })).rejects.toMatchObject({ code: 'InvalidOptions' });
    await storage.close();
  });
});

describe("each agent's own tools (issue 24)", () => {
  it("shows the agent's model only its tools (plus the control tools), and a call outside them is not found", async () => {
    const log: string[] = [];
    const model = scriptedModel([{ text: '', toolCalls: [{ id: 'w1', name: 'write_file', args: { path: 'a', text: 'b' } }, { id: 'r1', name: 'read_file', args: { path: 'a' } }] }, { text: 'done' }]);
    storage = sqliteStorage({ filename: ':memory:' });
    runtime = await createRuntime({
      storage,
      model,
      tools: [readFileTool(log), writeFileTool(log), echoTool('read_more')],
      agents: { reader: { systemPrompt: 'You read.', tools: ['read_*'] } },
    });
    const session = await runtime.createSession({ agent: 'reader', permissionMode: 'auto' });
    expect((await runTurn(session, 'go')).outcome).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(names(model.requests[0]!.tools)).toEqual(['read_file', 'read_more', 'update_plan']);
    expect(await toolResults(session)).toEqual([
      { name: 'write_file', status: 'failed', content: "ToolNotFound: no tool named 'write_file' is available" },
      { name: 'read_file', status: 'succeeded', content: 'contents of a' },
    ]);
    expect(log).toEqual(['read_file a']);
  });

  it('refuses a hostile tool pattern: InvalidOptions', async () => {
    storage = sqliteStorage({ filename: ':memory:' });
    const agents = { a: { tools: ['read_[x'] } };
    await expect(createRuntime({ storage, model: scriptedModel([]), agents })).rejects.toMatchObject({ code: 'InvalidOptions' });
    await storage.close();
  });
});

describe('tool sources (issue 24)', () => {
  it("adds a source's tool to the next model request once it says its list changed, and a call to a removed one is not found", async () => {
    const source = new ChangingSource();
    const ran: string[] = [];
    const model = scriptedModel([
      { text: 'nothing yet' },
      { text: '', toolCalls: [{ id: 'c1', name: 'mcp__search', args: {} }] },
      { text: 'found' },
      { text: '', toolCalls: [{ id: 'c2', name: 'mcp__search', args: {} }] },
      { text: 'gone' },
    ]);
    storage = sqliteStorage({ filename: ':memory:' });
    runtime = await createRuntime({ storage, model, tools: [readFileTool()], toolSources: [source] });
    const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });

    await runTurn(session, 'one');
    expect(names(model.requests[0]!.tools)).toEqual(['read_file', 'update_plan']);

    source.set([echoTool('mcp__search', ran)]);
    expect((await runTurn(session, 'two')).outcome).toMatchObject({ finalText: 'found' });
    expect(names(model.requests[1]!.tools)).toEqual(['read_file', 'mcp__search', 'update_plan']);
    expect(ran).toEqual(['mcp__search']);

    source.set([]);
    expect((await runTurn(session, 'three')).outcome).toMatchObject({ finalText: 'gone' });
    expect(names(model.requests[3]!.tools)).toEqual(['read_file', 'update_plan']);
    expect((await toolResults(session)).map((r) => [r.name, r.status, r.content])).toEqual([
      ['mcp__search', 'succeeded', 'mcp__search ran'],
      ['mcp__search', 'failed', "ToolNotFound: no tool named 'mcp__search' is available"],
    ]);
    expect(ran).toEqual(['mcp__search']);
  });

  it("leaves out a source's tool whose name another tool has, with a warning, and unsubscribes on shutdown", async () => {
    const source = new ChangingSource();
    const warnings: string[] = [];
    const model = scriptedModel([{ text: 'one' }]);
    storage = sqliteStorage({ filename: ':memory:' });
    runtime = await createRuntime({ storage, model, tools: [readFileTool()], toolSources: [source], warn: (m) => warnings.push(m) });
    source.set([echoTool('read_file'), echoTool('update_plan'), echoTool('mcp__ok')]);
    const session = await runtime.createSession({ agent: 'default' });
    await runTurn(session, 'go');
    expect(names(model.requests[0]!.tools)).toEqual(['read_file', 'mcp__ok', 'update_plan']);
    expect(warnings).toEqual([
      "tool source 'test:changing': a tool named 'read_file' exists already; this one is left out",
      "tool source 'test:changing': a tool named 'update_plan' exists already; this one is left out",
    ]);
    expect(source.listeners.size).toBe(1);
    await runtime.shutdown();
    runtime = undefined;
    expect(source.listeners.size).toBe(0);
  });

  it('a call keeps the tool it resolved as it started, though its source drops it while it waits for approval', async () => {
    const source = new ChangingSource();
    const ran: string[] = [];
    const tool = defineTool({
      name: 'mcp__deploy',
      description: 'deploy',
      effect: 'execute',
      input: z.object({}),
      execute: () => {
        ran.push('mcp__deploy');
        return { status: 'succeeded', content: 'deployed' };
      },
    });
    source.set([tool]);
    const model = scriptedModel([{ text: '', toolCalls: [{ id: 'c1', name: 'mcp__deploy', args: {} }] }, { text: 'done' }]);
    storage = sqliteStorage({ filename: ':memory:' });
    runtime = await createRuntime({ storage, model, toolSources: [source] });
    const session = await runtime.createSession({ agent: 'default', permissionMode: 'ask' });
    const asked = new Promise<string>((resolve) => session.updates$.subscribe((u) => u.update.type === 'permission_requested' && resolve(u.turnId)));
    const started = await session.startTurn({ clientRequestId: 'r', input: [{ type: 'text', text: 'deploy' }] });
    if (!started.ok) throw new Error('refused');
    const turnId = await asked;
    source.set([]);
    expect(await session.resolvePermission({ turnId, toolCallId: 'c1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(ran).toEqual(['mcp__deploy']);
  });
});
