import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workspaceTools, type ScriptedToolCall } from '../../src/index.js';
import { harness, nextUpdate, startTurn, types, type Harness } from '../support/harness.js';
import { useTempDirs, writeTree } from '../support/workspace.js';
import { toolResults } from './support.js';

const tempDir = useTempDirs('turnchart-modes-');

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

async function session(mode: 'ask' | 'auto' | 'read_only', toolCalls: ScriptedToolCall[]) {
  const root = await tempDir();
  await writeTree(root, { 'a.txt': 'alpha\n', 'src/b.ts': 'beta\n' });
  h = await harness([{ text: 'working', toolCalls }, { text: 'done' }], { tools: workspaceTools({ root }), permissionMode: mode });
  return { root, h };
}

describe('workspace tools under the session permission modes', () => {
  it('ask: write_file asks for approval and runs only after allow_once', async () => {
    const { root, h } = await session('ask', [{ id: 'w1', name: 'write_file', args: { path: 'new/c.txt', content: 'gamma' } }]);
    const asked = nextUpdate(h.session, 'permission_requested');
    const turnId = await startTurn(h.session, 'write');
    expect((await asked).update).toEqual({ type: 'permission_requested', toolCallId: 'w1', name: 'write_file', paths: ['new/c.txt'] });
    await expect(readFile(path.join(root, 'new/c.txt'), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await h.session.resolvePermission({ turnId, toolCallId: 'w1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(await readFile(path.join(root, 'new/c.txt'), 'utf8')).toBe('gamma');
    expect(await toolResults(h)).toMatchObject([{ status: 'succeeded', content: 'wrote 5 bytes to new/c.txt' }]);
  });

  it('ask: edit_file and run_command ask too', async () => {
    const { h } = await session('ask', [
      { id: 'e1', name: 'edit_file', args: { path: 'a.txt', oldText: 'alpha', newText: 'ALPHA' } },
      { id: 'r1', name: 'run_command', args: { command: 'cat a.txt' } },
    ]);
    const names: string[] = [];
    h.session.updates$.subscribe((u) => {
      if (u.update.type !== 'permission_requested') return;
      names.push(u.update.name);
      void h.session.resolvePermission({ turnId: u.turnId, toolCallId: u.update.toolCallId, decision: 'allow_once' });
    });
    const turnId = await startTurn(h.session, 'edit');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(names).toEqual(['edit_file', 'run_command']);
    expect((await toolResults(h)).map((r) => [r.status, r.content])).toEqual([
      ['succeeded', 'edited a.txt: replaced 1 occurrence'],
      ['succeeded', 'exit code 0\nALPHA\n'],
    ]);
  });

  it('ask: reads run without asking', async () => {
    const { h } = await session('ask', [
      { id: 'r1', name: 'read_file', args: { path: 'a.txt' } },
      { id: 'l1', name: 'list_dir', args: {} },
      { id: 'g1', name: 'grep', args: { pattern: 'beta' } },
    ]);
    const turnId = await startTurn(h.session, 'read');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(types(h.updates)).not.toContain('permission_requested');
    expect((await toolResults(h)).map((r) => [r.status, r.content])).toEqual([
      ['succeeded', '1\talpha'],
      ['succeeded', 'a.txt\nsrc/'],
      ['succeeded', 'src/b.ts:1: beta'],
    ]);
  });

  it('ask: an escape is rule-denied before anyone is asked', async () => {
    const { h } = await session('ask', [{ id: 'w1', name: 'write_file', args: { path: '../x.txt', content: 'x' } }]);
    const turnId = await startTurn(h.session, 'write');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect(types(h.updates)).not.toContain('permission_requested');
    expect(await toolResults(h)).toMatchObject([{ status: 'denied', content: "denied by rule: '../x.txt' is outside the workspace" }]);
  });

  it('read_only: writes and commands are rule-denied, reads run, the turn goes on', async () => {
    const { root, h } = await session('read_only', [
      { id: 'w1', name: 'write_file', args: { path: 'c.txt', content: 'x' } },
      { id: 'e1', name: 'edit_file', args: { path: 'a.txt', oldText: 'alpha', newText: 'x' } },
      { id: 'x1', name: 'run_command', args: { command: 'touch ran' } },
      { id: 'r1', name: 'read_file', args: { path: 'a.txt' } },
    ]);
    const turnId = await startTurn(h.session, 'try');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    expect((await toolResults(h)).map((r) => [r.toolName, r.status, r.content])).toEqual([
      ['write_file', 'denied', "denied by rule: the session's permission mode does not allow 'write_file'"],
      ['edit_file', 'denied', "denied by rule: the session's permission mode does not allow 'edit_file'"],
      ['run_command', 'denied', "denied by rule: the session's permission mode does not allow 'run_command'"],
      ['read_file', 'succeeded', '1\talpha'],
    ]);
    expect(await readFile(path.join(root, 'a.txt'), 'utf8')).toBe('alpha\n');
    await expect(readFile(path.join(root, 'c.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(readFile(path.join(root, 'ran'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
