import { rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { invalidationNotice, renderSandboxPolicy, replacementText } from '../../../src/context/world-state/index.js';
import {
  createRuntime,
  defineTool,
  scriptedModel,
  type ModelRequest,
  type RequestMessage,
  type Runtime,
  type SessionStorage,
  type WorldStateSection,
} from '../../../src/index.js';
import { writeSkill } from '../../skills/skill-fixtures.js';
import { durableTargets, type DurableDatabase } from '../../support/databases.js';
import { readFileTool, runTurn, types, type Harness } from '../../support/harness.js';
import { storedWorldState, useTempDirs, workspaceHarness, writeTree } from '../../support/workspace.js';

const tempDir = useTempDirs();

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const RULES = '# Rules\n\nUse tabs.\n';
const ENTRIES = ['.git/', 'AGENTS.md', 'README.md', 'src/'];
const SECTIONS: WorldStateSection[] = ['runtime/user-project-context', 'project/AGENTS.md', 'skills/catalog', 'runtime/sandbox-policy'];

/** A workspace that is its own repository root (a `.git` folder), so the rendered context does not depend on the host. */
async function workspace(agents: string | null = RULES): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, { '.git/': '', 'README.md': 'hello', 'src/': '', ...(agents === null ? {} : { 'AGENTS.md': agents }) });
  return dir;
}

function projectContext(dir: string, entries: string[] = ENTRIES): string {
  return [
    '<user_project_context format_version="1">',
    `working_directory: ${dir}`,
    `repository_root: ${dir}`,
    'top_level_entries:',
    ...entries.map((e) => `- ${e}`),
    '</user_project_context>',
  ].join('\n');
}

function instructions(dir: string, text: string): string {
  return `<project_instructions path="${path.join(dir, 'AGENTS.md')}">\n${text}\n</project_instructions>`;
}

const user = (text: string): RequestMessage => ({ role: 'user', text });
const readCall = (id: string, file: string) => ({ id, name: 'read_file', args: { path: file } });
const assistantWithRead = (text: string, id: string, file: string): RequestMessage => ({
  role: 'assistant',
  text,
  reasoning: '',
  toolCalls: [{ id, name: 'read_file', argumentsText: JSON.stringify({ path: file }) }],
});
const readResult = (id: string, file: string): RequestMessage => ({
  role: 'tool',
  toolCallId: id,
  toolName: 'read_file',
  status: 'success',
  content: `contents of ${file}`,
});

function mentions(request: ModelRequest, needle: string): boolean {
  return request.messages.some((m) => m.role === 'user' && m.text.includes(needle));
}

describe('world state at runtime (CW-2, 001 §3)', () => {
  it('appends one message per section after the user message, in the fixed order, stored under idempotent ids', async () => {
    const dir = await workspace();
    const skills = await tempDir();
    const review = await writeSkill(skills, 'review', '---\ndescription: Reviews a diff\n---\nLook closely.');
    h = await workspaceHarness([{ text: 'done' }], { workspaceDir: dir, skills: { dir: skills } });
    const { turnId, outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });

    const bodies = [
      projectContext(dir),
      instructions(dir, RULES),
      `<available_skills>\n- review: Reviews a diff (${review})\n</available_skills>`,
      renderSandboxPolicy('ask'),
    ];
    expect(h.model.requests).toHaveLength(1);
    expect(h.model.requests[0]!.messages).toEqual([user('go'), ...bodies.map(user)]);
    expect(bodies.map((b) => b.slice(0, b.indexOf('\n')))).toEqual([
      '<user_project_context format_version="1">',
      `<project_instructions path="${path.join(dir, 'AGENTS.md')}">`,
      '<available_skills>',
      '<sandbox_policy>',
    ]);

    const stored = await h.storage.listMessages(h.session.id);
    expect(stored.map((m) => (m.message.role === 'user' ? m.message.kind : m.message.role))).toEqual([
      'normal',
      'world_state',
      'world_state',
      'world_state',
      'world_state',
      'assistant',
    ]);
    expect(storedWorldState(stored)).toEqual(SECTIONS.map((section, i) => ({ id: `world-state:${turnId}:1:1:${section}`, section, text: bodies[i] })));
  });

  it('runs a whole turn with a blank AGENTS.md without ever sending project instructions', async () => {
    const dir = await workspace(' \n\t\r\n   \n');
    h = await workspaceHarness([{ text: 'reading', toolCalls: [readCall('r1', 'README.md')] }, { text: 'done' }], { workspaceDir: dir });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(h.model.requests).toHaveLength(2);
    for (const request of h.model.requests) {
      expect(mentions(request, '<project_instructions')).toBe(false);
      // Nor a notice: a section that never existed is not announced as gone.
      expect(mentions(request, 'AGENTS.md content')).toBe(false);
    }
    const stored = await h.storage.listMessages(h.session.id);
    expect(storedWorldState(stored).map((m) => m.section)).toEqual(['runtime/user-project-context', 'runtime/sandbox-policy']);
    expect(stored.some((m) => m.message.role === 'user' && m.message.text.includes('<project_instructions'))).toBe(false);
    // The file is still a top-level entry of the project context.
    expect(h.model.requests[0]!.messages[1]).toEqual(user(projectContext(dir)));
  });

  describe('a source that cannot be read fails the turn before any model call', () => {
    async function expectFailsBeforeTheModel(hh: Harness, code: string): Promise<void> {
      const { turnId, outcome } = await runTurn(hh.session, 'go');
      expect(outcome).toMatchObject({ status: 'failed', code });
      expect(hh.model.requests).toHaveLength(0);
      const kinds = types(hh.updates);
      expect(kinds).not.toContain('text_delta');
      expect(kinds).not.toContain('reasoning_delta');
      expect(kinds).not.toContain('draft_cleared');
      expect(hh.updates.filter((u) => u.update.type === 'phase_changed').map((u) => (u.update as { phase: string }).phase)).not.toContain(
        'running_model',
      );
      expect(hh.updates.at(-1)!.update).toMatchObject({ type: 'turn_finished', outcome: { status: 'failed', code } });
      expect(hh.session.snapshot().runtime).toMatchObject({ kind: 'terminal', turnId, outcome: { status: 'failed', code } });
      expect(await hh.storage.getTurn(turnId)).toMatchObject({ status: 'failed', errorCode: code });
      // Captured before anything is written: not even the readable sections reached storage.
      const stored = await hh.storage.listMessages(hh.session.id);
      expect(stored.map((m) => m.message.role === 'user' && m.message.kind)).toEqual(['normal']);
    }

    it('AGENTS.md as a symbolic link → project_instruction_error', async () => {
      const dir = await workspace(null);
      await writeFile(path.join(dir, 'rules.md'), RULES);
      await symlink(path.join(dir, 'rules.md'), path.join(dir, 'AGENTS.md'));
      h = await workspaceHarness([{ text: 'never' }], { workspaceDir: dir });
      await expectFailsBeforeTheModel(h, 'project_instruction_error');
    });

    it('AGENTS.md over 64 KiB → project_instruction_error; once fixed, the next turn runs', async () => {
      const dir = await workspace('a'.repeat(64 * 1024 + 1));
      h = await workspaceHarness([{ text: 'now it works' }], { workspaceDir: dir });
      await expectFailsBeforeTheModel(h, 'project_instruction_error');

      await writeFile(path.join(dir, 'AGENTS.md'), 'a'.repeat(64 * 1024));
      const { outcome } = await runTurn(h.session, 'again');
      expect(outcome).toEqual({ status: 'completed', finalText: 'now it works' });
      expect(h.model.requests[0]!.messages.slice(-3)).toEqual([user(projectContext(dir)), user(instructions(dir, 'a'.repeat(64 * 1024))), user(renderSandboxPolicy('ask'))]);
    });

    it('a workspace directory that does not exist → user_project_context_error', async () => {
      const missing = path.join(await tempDir(), 'not-there');
      h = await workspaceHarness([{ text: 'never' }], { workspaceDir: missing });
      await expectFailsBeforeTheModel(h, 'user_project_context_error');
    });
  });

  it('adds nothing when the world has not changed, later in the turn or in the next turn', async () => {
    const dir = await workspace();
    const skills = await tempDir();
    await writeSkill(skills, 'review', 'Look closely.');
    h = await workspaceHarness([{ text: 'reading', toolCalls: [readCall('r1', 'README.md')] }, { text: 'done' }, { text: 'still done' }], {
      workspaceDir: dir,
      skills: { dir: skills },
    });
    const { turnId } = await runTurn(h.session, 'go');
    await runTurn(h.session, 'again');
    const [first, second, third] = h.model.requests;
    expect(first!.messages).toHaveLength(5);
    expect(second!.messages).toEqual([...first!.messages, assistantWithRead('reading', 'r1', 'README.md'), readResult('r1', 'README.md')]);
    expect(third!.messages).toEqual([...second!.messages, { role: 'assistant', text: 'done', reasoning: '', toolCalls: [] }, user('again')]);
    const ids = storedWorldState(await h.storage.listMessages(h.session.id)).map((m) => m.id);
    expect(ids).toEqual(SECTIONS.map((s) => `world-state:${turnId}:1:1:${s}`));
  });

  it('AGENTS.md rewritten between two model calls: the next call ends with the replacement notice and the new body', async () => {
    const dir = await workspace();
    h = await workspaceHarness(
      [
        async () => {
          await writeFile(path.join(dir, 'AGENTS.md'), 'New rules: use spaces.');
          return { text: 'reading', toolCalls: [readCall('r1', 'AGENTS.md')] };
        },
        { text: 'done' },
      ],
      { workspaceDir: dir },
    );
    const { turnId, outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });
    const [first, second] = h.model.requests;
    expect(first!.messages.at(-2)).toEqual(user(instructions(dir, RULES)));
    const notice = replacementText('project/AGENTS.md', instructions(dir, 'New rules: use spaces.'));
    expect(notice).toMatch(/^The following AGENTS\.md content replaces all previously provided AGENTS\.md content\.\n<project_instructions /);
    expect(second!.messages).toEqual([...first!.messages, assistantWithRead('reading', 'r1', 'AGENTS.md'), readResult('r1', 'AGENTS.md'), user(notice)]);
    const latest = storedWorldState(await h.storage.listMessages(h.session.id)).at(-1);
    expect(latest).toEqual({ id: `world-state:${turnId}:2:1:project/AGENTS.md`, section: 'project/AGENTS.md', text: notice });
  });

  it('AGENTS.md deleted mid-turn: an invalidation notice once, then silence; recreated: the body again without a notice', async () => {
    const dir = await workspace();
    const removeFile = defineTool({
      name: 'remove_file',
      description: 'Deletes a workspace file',
      effect: 'write',
      input: z.object({ path: z.string() }),
      execute: async (args) => {
        await rm(path.join(dir, args.path));
        return { status: 'succeeded', content: `removed ${args.path}` };
      },
    });
    h = await workspaceHarness(
      [
        { text: 'removing', toolCalls: [{ id: 'rm1', name: 'remove_file', args: { path: 'AGENTS.md' } }] },
        { text: 'reading', toolCalls: [readCall('r2', 'README.md')] },
        async () => {
          await writeFile(path.join(dir, 'AGENTS.md'), 'Back again.');
          return { text: 'reading', toolCalls: [readCall('r3', 'AGENTS.md')] };
        },
        { text: 'done' },
      ],
      { workspaceDir: dir, permissionMode: 'auto', tools: [removeFile, readFileTool()] },
    );
    const { turnId, outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });
    const [first, second, third, fourth] = h.model.requests;
    const withoutAgents = ENTRIES.filter((e) => e !== 'AGENTS.md');

    const invalidated = invalidationNotice('project/AGENTS.md');
    expect(invalidated).toBe('The previously provided AGENTS.md content no longer applies.');
    expect(second!.messages.slice(first!.messages.length + 2)).toEqual([
      user(replacementText('runtime/user-project-context', projectContext(dir, withoutAgents))),
      user(invalidated),
    ]);
    // The section is gone and the model was told: nothing more about it.
    expect(third!.messages).toEqual([...second!.messages, assistantWithRead('reading', 'r2', 'README.md'), readResult('r2', 'README.md')]);
    // Recreated after the invalidation: a first appearance again, without a notice.
    expect(fourth!.messages.slice(third!.messages.length + 2)).toEqual([
      user(replacementText('runtime/user-project-context', projectContext(dir))),
      user(instructions(dir, 'Back again.')),
    ]);
    const agents = storedWorldState(await h.storage.listMessages(h.session.id)).filter((m) => m.section === 'project/AGENTS.md');
    expect(agents.map((m) => m.id)).toEqual([1, 2, 4].map((call) => `world-state:${turnId}:${call}:1:project/AGENTS.md`));
  });

  it('a permission mode changed between turns reaches the next turn as a replaced sandbox policy', async () => {
    const dir = await workspace();
    h = await workspaceHarness([{ text: 'one' }, { text: 'two' }], { workspaceDir: dir });
    await runTurn(h.session, 'first');
    expect(await h.session.setPermissionMode('auto')).toEqual({ ok: true });
    const { turnId } = await runTurn(h.session, 'second');
    const [first, second] = h.model.requests;
    const replaced = replacementText('runtime/sandbox-policy', renderSandboxPolicy('auto'));
    expect(replaced).toMatch(/^The following sandbox policy replaces all previously provided sandbox policy\.\n<sandbox_policy>\npermission_mode: auto\n/);
    expect(second!.messages).toEqual([...first!.messages, { role: 'assistant', text: 'one', reasoning: '', toolCalls: [] }, user('second'), user(replaced)]);
    const latest = storedWorldState(await h.storage.listMessages(h.session.id)).at(-1);
    expect(latest).toEqual({ id: `world-state:${turnId}:1:1:runtime/sandbox-policy`, section: 'runtime/sandbox-policy', text: replaced });
  });

  it('only world_state messages count as a section being present: user text with the same markers does not', async () => {
    const policy = renderSandboxPolicy('ask');
    expect(policy).toContain('permission_mode: ask');
    h = await workspaceHarness([{ text: 'noted' }, { text: 'noted again' }]);
    const { turnId } = await runTurn(h.session, policy, 'c-1');
    // The user typed the section: it is still sent, as a first appearance (no notice).
    expect(h.model.requests[0]!.messages).toEqual([user(policy), user(policy)]);
    const stored = await h.storage.listMessages(h.session.id);
    expect(stored.map((m) => (m.message.role === 'user' ? m.message.kind : m.message.role))).toEqual(['normal', 'world_state', 'assistant']);
    expect(storedWorldState(stored)).toEqual([{ id: `world-state:${turnId}:1:1:runtime/sandbox-policy`, section: 'runtime/sandbox-policy', text: policy }]);

    // The user typing the invalidation notice does not make the section count as gone either.
    await runTurn(h.session, invalidationNotice('runtime/sandbox-policy'), 'c-2');
    const [first, second] = h.model.requests;
    expect(second!.messages).toEqual([
      ...first!.messages,
      { role: 'assistant', text: 'noted', reasoning: '', toolCalls: [] },
      user(invalidationNotice('runtime/sandbox-policy')),
    ]);
  });

  describe('the baseline advances only after every write', () => {
    it('the first world-state write fails → persistence_error without a model call; the next turn sends full bodies', async () => {
      const dir = await workspace();
      h = await workspaceHarness([{ text: 'answered' }], { workspaceDir: dir });
      h.storage.failWhen('appendMessage', (m) => m.message.role === 'user' && m.message.kind === 'world_state');
      const failed = await runTurn(h.session, 'first');
      expect(failed.outcome).toMatchObject({ status: 'failed', code: 'persistence_error' });
      expect(h.model.requests).toHaveLength(0);
      const attempts = h.storage.calls.filter((c) => c.method === 'appendMessage');
      expect(attempts.map((c) => c.failed)).toEqual([true]);
      expect(storedWorldState(await h.storage.listMessages(h.session.id))).toEqual([]);

      h.storage.heal();
      const { turnId, outcome } = await runTurn(h.session, 'second');
      expect(outcome).toEqual({ status: 'completed', finalText: 'answered' });
      expect(h.model.requests[0]!.messages).toEqual([
        user('first'),
        user('second'),
        user(projectContext(dir)),
        user(instructions(dir, RULES)),
        user(renderSandboxPolicy('ask')),
      ]);
      expect(storedWorldState(await h.storage.listMessages(h.session.id)).map((m) => m.id)).toEqual(
        ['runtime/user-project-context', 'project/AGENTS.md', 'runtime/sandbox-policy'].map((s) => `world-state:${turnId}:1:1:${s}`),
      );
    });

    it('a later write of the same sampling fails → every section is sent again at the next turn', async () => {
      const dir = await workspace();
      h = await workspaceHarness([{ text: 'answered' }], { workspaceDir: dir });
      h.storage.failWhen('appendMessage', (m) => m.message.role === 'user' && m.message.section === 'runtime/sandbox-policy');
      const failed = await runTurn(h.session, 'first');
      expect(failed.outcome).toMatchObject({ status: 'failed', code: 'persistence_error' });
      expect(h.model.requests).toHaveLength(0);
      expect(storedWorldState(await h.storage.listMessages(h.session.id)).map((m) => m.section)).toEqual([
        'runtime/user-project-context',
        'project/AGENTS.md',
      ]);

      h.storage.heal();
      await runTurn(h.session, 'second');
      // The two sections already written are still in the conversation but the baseline never moved, so they are
      // re-sent as replacements (001 §3 table: no baseline, message retained); the sandbox policy appears for the first time.
      expect(h.model.requests[0]!.messages).toEqual([
        user('first'),
        user(projectContext(dir)),
        user(instructions(dir, RULES)),
        user('second'),
        user(replacementText('runtime/user-project-context', projectContext(dir))),
        user(replacementText('project/AGENTS.md', instructions(dir, RULES))),
        user(renderSandboxPolicy('ask')),
      ]);
    });
  });
});

describe.each(durableTargets)('world state across a restart on $name (CW-2)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const r of runtimes.splice(0)) await r.shutdown().catch(() => undefined);
    await db?.drop();
    db = undefined;
  });

  it.skipIf(skip)('re-sends the retained sections once with a replacement notice, then nothing', async () => {
    db = create();
    const dir = await workspace();
    const first = await createRuntime({ storage: db.open(), model: scriptedModel([{ text: 'first answer' }]), tools: [readFileTool()] });
    runtimes.push(first);
    const session = await first.createSession({ workspaceDir: dir });
    await runTurn(session, 'hello');
    await first.shutdown();

    const storage: SessionStorage = db.open();
    const model = scriptedModel([{ text: 'reading', toolCalls: [readCall('r1', 'README.md')] }, { text: 'done' }]);
    const second = await createRuntime({ storage, model, tools: [readFileTool()] });
    runtimes.push(second);
    const reopened = await second.openSession(session.id);
    const { turnId, outcome } = await runTurn(reopened, 'again');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });

    const before = [user('hello'), user(projectContext(dir)), user(instructions(dir, RULES)), user(renderSandboxPolicy('ask'))];
    const resent: [WorldStateSection, string][] = [
      ['runtime/user-project-context', projectContext(dir)],
      ['project/AGENTS.md', instructions(dir, RULES)],
      ['runtime/sandbox-policy', renderSandboxPolicy('ask')],
    ];
    const [afterRestart, next] = model.requests;
    expect(afterRestart!.messages).toEqual([
      ...before,
      { role: 'assistant', text: 'first answer', reasoning: '', toolCalls: [] },
      user('again'),
      ...resent.map(([section, body]) => user(replacementText(section, body))),
    ]);
    expect(afterRestart!.messages.at(-2)).toEqual(
      user(`The following AGENTS.md content replaces all previously provided AGENTS.md content.\n${instructions(dir, RULES)}`),
    );
    expect(next!.messages).toEqual([...afterRestart!.messages, assistantWithRead('reading', 'r1', 'README.md'), readResult('r1', 'README.md')]);

    const stored = storedWorldState(await storage.listMessages(session.id));
    expect(stored.slice(3)).toEqual(
      resent.map(([section, body]) => ({ id: `world-state:${turnId}:1:1:${section}`, section, text: replacementText(section, body) })),
    );
  });
});
