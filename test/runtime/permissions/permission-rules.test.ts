import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createRuntime,
  defineTool,
  scriptedModel,
  sqliteStorage,
  type AgentConfig,
  type AnyTool,
  type PermissionMode,
  type PermissionRules,
  type Runtime,
  type ScriptedToolCall,
  type SessionHandle,
  type SessionStorage,
  type ToolEffect,
} from '../../../src/index.js';
import { nextUpdate } from '../../support/harness.js';

/**
 * Issue 24: permission rules by tool-name pattern join the session's permission mode inside the
 * tool-call chart's decision — deny beats ask beats allow, the most specific pattern wins — and the
 * audit says a rule decided.
 */

let runtime: Runtime | undefined;
let storage: SessionStorage;
afterEach(async () => {
  await runtime?.shutdown();
  runtime = undefined;
});

function recordingTool(name: string, effect: ToolEffect, ran: string[]): AnyTool {
  return defineTool({
    name,
    description: `${name} (${effect})`,
    effect,
    input: z.object({}),
    execute: () => {
      ran.push(name);
      return { status: 'succeeded', content: `${name} ran` };
    },
  });
}

interface Setup {
  mode: PermissionMode;
  calls: ScriptedToolCall[];
  /** The runtime's rules. */
  permissions?: PermissionRules;
  /** The session's agent's own rules. */
  agentPermissions?: PermissionRules;
  nonInteractive?: boolean;
}

async function open(setup: Setup): Promise<{ session: SessionHandle; ran: string[] }> {
  const ran: string[] = [];
  const tools = [
    recordingTool('read_notes', 'read', ran),
    recordingTool('run_command', 'execute', ran),
    recordingTool('github__list_issues', 'read', ran),
    recordingTool('github__delete_repo', 'write', ran),
  ];
  const agent: AgentConfig = { systemPrompt: 'You work.', ...(setup.agentPermissions && { permissions: setup.agentPermissions }) };
  storage = sqliteStorage({ filename: ':memory:' });
  runtime = await createRuntime({
    storage,
    model: scriptedModel([{ text: '', toolCalls: setup.calls }, { text: 'done' }]),
    tools,
    agents: { worker: agent },
    ...(setup.permissions && { permissions: setup.permissions }),
  });
  const session = await runtime.createSession({ agent: 'worker', permissionMode: setup.mode, nonInteractive: setup.nonInteractive === true });
  return { session, ran };
}

async function turn(session: SessionHandle) {
  const started = await session.startTurn({ clientRequestId: 'r1', input: [{ type: 'text', text: 'go' }] });
  if (!started.ok) throw new Error(JSON.stringify(started.error));
  return started.turnId;
}

async function results(session: SessionHandle) {
  const messages = await storage.listMessages(session.id);
  return messages.flatMap((m) => (m.message.role === 'tool' ? [{ name: m.message.toolName, status: m.message.status, content: m.message.content }] : []));
}

async function audits(session: SessionHandle) {
  const log = await runtime!.auditLog(session.id);
  return log.entries.map((e) => ({ toolName: e.toolName, verdict: e.verdict, decidedBy: e.decidedBy })).reverse();
}

describe('permission rules as chart guards (issue 24)', () => {
  it('deny: a denied tool does not run even in auto mode; the result and the audit say a rule decided, naming it', async () => {
    const { session, ran } = await open({
      mode: 'auto',
      calls: [{ id: 'c1', name: 'github__delete_repo', args: {} }],
      permissions: { '*__delete*': 'deny', 'github__*': 'allow' },
    });
    expect(await session.waitForTurn(await turn(session))).toEqual({ status: 'completed', finalText: 'done' });
    expect(ran).toEqual([]);
    // `*__delete*` and `github__*` tie on 8 literal characters: the stricter, deny, wins.
    expect(await results(session)).toEqual([{ name: 'github__delete_repo', status: 'denied', content: "denied by the permission rule '*__delete*: deny'" }]);
    expect(await audits(session)).toEqual([{ toolName: 'github__delete_repo', verdict: 'denied', decidedBy: 'rule' }]);
  });

  it('ask: the user is asked even in auto mode and even for a read; allowing it runs it', async () => {
    const { session, ran } = await open({ mode: 'auto', calls: [{ id: 'c1', name: 'read_notes', args: {} }], permissions: { read_notes: 'ask' } });
    const asked = nextUpdate(session, 'permission_requested');
    const turnId = await turn(session);
    expect((await asked).update).toMatchObject({ type: 'permission_requested', toolCallId: 'c1', name: 'read_notes' });
    expect(session.snapshot().runtime).toMatchObject({ kind: 'running', pendingApproval: { toolCallId: 'c1', name: 'read_notes' } });
    expect(ran).toEqual([]);
    expect(await session.resolvePermission({ turnId, toolCallId: 'c1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(ran).toEqual(['read_notes']);
    expect(await audits(session)).toEqual([{ toolName: 'read_notes', verdict: 'allowed', decidedBy: 'user' }]);
  });

  it('ask: a non-interactive session (as every sub-agent is) is denied instead of asking', async () => {
    const { session, ran } = await open({ mode: 'auto', calls: [{ id: 'c1', name: 'read_notes', args: {} }], permissions: { 'read_*': 'ask' }, nonInteractive: true });
    expect(await session.waitForTurn(await turn(session))).toEqual({ status: 'completed', finalText: 'done' });
    expect(ran).toEqual([]);
    expect(await results(session)).toEqual([
      { name: 'read_notes', status: 'denied', content: "denied by rule: 'read_notes' needs an approval, and this session cannot ask for one (a sub-agent's session is non-interactive)" },
    ]);
  });

  it('allow: in ask mode an allowed execute runs without an approval, audited as allowed by the rule', async () => {
    const { session, ran } = await open({ mode: 'ask', calls: [{ id: 'c1', name: 'run_command', args: {} }], permissions: { run_command: 'allow' } });
    const updates: string[] = [];
    session.updates$.subscribe((u) => updates.push(u.update.type));
    expect(await session.waitForTurn(await turn(session))).toEqual({ status: 'completed', finalText: 'done' });
    expect(ran).toEqual(['run_command']);
    expect(updates).not.toContain('permission_requested');
    expect(await audits(session)).toEqual([{ toolName: 'run_command', verdict: 'allowed', decidedBy: 'rule' }]);
  });

  it('allow: never widens read_only, which still forbids what is not a read', async () => {
    const { session, ran } = await open({
      mode: 'read_only',
      calls: [
        { id: 'c1', name: 'run_command', args: {} },
        { id: 'c2', name: 'github__list_issues', args: {} },
      ],
      permissions: { '*': 'allow' },
    });
    expect(await session.waitForTurn(await turn(session))).toEqual({ status: 'completed', finalText: 'done' });
    expect(ran).toEqual(['github__list_issues']);
    expect(await audits(session)).toEqual([
      { toolName: 'run_command', verdict: 'denied', decidedBy: 'mode' },
      { toolName: 'github__list_issues', verdict: 'allowed', decidedBy: 'rule' },
    ]);
  });

  it("an exact pattern beats a glob, and the agent's rule beats the runtime's for the same pattern", async () => {
    const { session, ran } = await open({
      mode: 'auto',
      calls: [
        { id: 'c1', name: 'github__list_issues', args: {} },
        { id: 'c2', name: 'github__delete_repo', args: {} },
      ],
      permissions: { 'github__*': 'deny', github__list_issues: 'deny' },
      agentPermissions: { github__list_issues: 'allow' },
    });
    expect(await session.waitForTurn(await turn(session))).toEqual({ status: 'completed', finalText: 'done' });
    expect(ran).toEqual(['github__list_issues']);
    expect((await results(session)).map((r) => [r.name, r.status, r.content])).toEqual([
      ['github__list_issues', 'succeeded', 'github__list_issues ran'],
      ['github__delete_repo', 'denied', "denied by the permission rule 'github__*: deny'"],
    ]);
  });

  it("a rule's deny beats the tool's own authorize hook asking", async () => {
    const ran: string[] = [];
    const guarded = defineTool({
      name: 'deploy',
      description: 'Deploy',
      effect: 'execute',
      input: z.object({}),
      authorize: () => ({ decision: 'ask' }),
      execute: () => {
        ran.push('deploy');
        return { status: 'succeeded', content: 'deployed' };
      },
    });
    storage = sqliteStorage({ filename: ':memory:' });
    runtime = await createRuntime({
      storage,
      model: scriptedModel([{ text: '', toolCalls: [{ id: 'c1', name: 'deploy', args: {} }] }, { text: 'done' }]),
      tools: [guarded],
      permissions: { deploy: 'deny' },
    });
    const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
    expect(await session.waitForTurn(await turn(session))).toEqual({ status: 'completed', finalText: 'done' });
    expect(ran).toEqual([]);
    expect(await results(session)).toEqual([{ name: 'deploy', status: 'denied', content: "denied by the permission rule 'deploy: deny'" }]);
  });

  it('refuses hostile rules when the runtime is made: InvalidOptions', async () => {
    storage = sqliteStorage({ filename: ':memory:' });
    const model = scriptedModel([]);
    await expect(createRuntime({ storage, model, permissions: { 'run_[ab': 'deny' } })).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(createRuntime({ storage, model, agents: { a: { permissions: { '{a,b}*c*d*e*': 'deny' } } } })).rejects.toMatchObject({ code: 'InvalidOptions' });
    const many = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`t${i}`, 'allow' as const]));
    await expect(createRuntime({ storage, model, permissions: many })).rejects.toMatchObject({ code: 'InvalidOptions' });
    await storage.close();
  });
});
