import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspaceTools, type AnyTool, type AuthorizeContext, type ExecuteContext } from '../../src/index.js';
import { useTempDirs } from '../support/workspace.js';

/**
 * A session's own workspace (`createSession({ workspaceDir })`, a host's directory per user): the
 * workspace tools work there when it lies beneath their root, and never widen to one outside it.
 */
const tempDir = useTempDirs('turnchart-session-workspace-');

const base = { sessionId: 'ses_1', turnId: 'turn_1', toolCallId: 'call_1' };
const authorizeCtx = (workspaceDir?: string): AuthorizeContext => ({ ...base, permissionMode: 'auto', ...(workspaceDir && { workspaceDir }) });
const executeCtx = (workspaceDir?: string): ExecuteContext => ({
  ...base,
  signal: new AbortController().signal,
  progress: () => undefined,
  approvedPaths: [],
  ...(workspaceDir && { workspaceDir }),
});

async function use(tool: AnyTool, args: Record<string, unknown>, workspaceDir?: string) {
  const parsed = tool.input.parse(args);
  const decision = await tool.authorize?.(parsed, authorizeCtx(workspaceDir));
  if (decision?.decision === 'deny') return { status: 'denied', content: decision.reason ?? '' };
  return tool.execute(parsed, executeCtx(workspaceDir));
}

describe("the workspace tools in a session's own directory", () => {
  it('work beneath it, refuse its siblings and parents, and keep to the root for a directory outside it', async () => {
    const root = await tempDir();
    const mine = path.join(root, 'users', 'a');
    await mkdir(path.join(root, 'users', 'b'), { recursive: true });
    await mkdir(mine, { recursive: true });
    await writeFile(path.join(root, 'users', 'b', 'theirs.md'), 'b only');
    await writeFile(path.join(root, 'top.md'), 'the root');
    const tools = new Map(workspaceTools({ root, sandbox: 'off' }).map((tool) => [tool.name, tool]));
    const tool = (name: string) => tools.get(name)!;

    expect(await use(tool('write_file'), { path: 'note.md', content: 'a only' }, mine)).toMatchObject({ status: 'succeeded' });
    expect(await use(tool('list_dir'), {}, mine)).toEqual({ status: 'succeeded', content: 'note.md' });
    expect(await use(tool('read_file'), { path: '../b/theirs.md' }, mine)).toMatchObject({ status: 'denied' });
    expect(await use(tool('read_file'), { path: path.join(root, 'top.md') }, mine)).toMatchObject({ status: 'denied' });
    expect(await use(tool('grep'), { pattern: 'only|root' }, mine)).toMatchObject({ content: expect.stringContaining('note.md:1: a only') });
    expect((await use(tool('grep'), { pattern: 'only|root' }, mine)).content).not.toMatch(/theirs|top/);
    const run = await use(tool('run_command'), { command: 'pwd' }, mine);
    expect(run.content).toBe(`exit code 0\n${mine}\n`);

    // Without one, or with one outside the root: the root, as the tools were built.
    expect((await use(tool('list_dir'), {})).content).toBe('top.md\nusers/');
    expect((await use(tool('list_dir'), {}, '/etc')).content).toBe('top.md\nusers/');
    expect((await use(tool('list_dir'), {}, path.join(root, '..'))).content).toBe('top.md\nusers/');
  });
});
