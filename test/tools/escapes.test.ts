import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workspaceTools } from '../../src/index.js';
import { harness, type Harness } from '../support/harness.js';
import { useTempDirs } from '../support/workspace.js';
import { escapeLayout, execute, snapshot, toolNamed, toolResults, type Layout } from './support.js';

const tempDir = useTempDirs('turnchart-escape-');

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const OUTSIDE = 'is outside the workspace';
const THROUGH_LINK = 'leads outside the workspace through a symbolic link';

/** One way out, as a path to a file (`file`) and to a directory (`dir`), and the reason it is denied for. */
interface Escape {
  name: string;
  file: (l: Layout) => string;
  dir: (l: Layout) => string;
  reason: string;
}

const ESCAPES: Escape[] = [
  { name: '../x', file: () => '../outside/secret.txt', dir: () => '../outside', reason: OUTSIDE },
  { name: 'a/../../x', file: () => 'a/../../outside/secret.txt', dir: () => 'a/../../outside', reason: OUTSIDE },
  { name: 'an absolute path outside', file: (l) => path.join(l.outside, 'secret.txt'), dir: (l) => l.outside, reason: OUTSIDE },
  { name: 'a symlinked file pointing outside', file: () => 'link-file', dir: () => 'link-file', reason: THROUGH_LINK },
  { name: 'a symlinked directory pointing outside', file: () => 'link-dir/secret.txt', dir: () => 'link-dir', reason: THROUGH_LINK },
  { name: 'a NUL byte', file: () => 'hello.txt\0../../outside/secret.txt', dir: () => 'a\0', reason: 'the path contains a NUL byte' },
];

/** Each tool's arguments for a path: the file-taking tools get the file path, list_dir and grep the directory. */
const TOOLS: { name: string; args: (e: Escape, l: Layout) => Record<string, unknown> }[] = [
  { name: 'read_file', args: (e, l) => ({ path: e.file(l) }) },
  { name: 'list_dir', args: (e, l) => ({ path: e.dir(l) }) },
  { name: 'grep', args: (e, l) => ({ pattern: 'secret', path: e.dir(l) }) },
  { name: 'write_file', args: (e, l) => ({ path: e.file(l), content: 'pwned' }) },
  { name: 'edit_file', args: (e, l) => ({ path: e.file(l), oldText: 'secret', newText: 'pwned' }) },
];

/**
 * One real turn, auto mode: the scripted model calls the tool once, then answers. Returns the
 * stored result and the turn's outcome, after checking nothing outside the workspace changed.
 */
async function attempt(layout: Layout, name: string, args: Record<string, unknown>) {
  const before = await snapshot(layout.outside);
  h = await harness([{ text: 'trying', toolCalls: [{ id: 'c1', name, args }] }, { text: 'could not' }], {
    tools: workspaceTools({ root: layout.root }),
    permissionMode: 'auto',
  });
  const started = await h.session.startTurn({ clientRequestId: 'c', input: [{ type: 'text', text: 'go' }] });
  if (!started.ok) throw new Error('turn refused');
  const outcome = await h.session.waitForTurn(started.turnId);
  expect(await snapshot(layout.outside)).toEqual(before);
  expect((await readdir(layout.base)).sort()).toEqual(['outside', 'ws']);
  const [result] = await toolResults(h);
  return { outcome, result };
}

describe('escapes from the workspace are rule denials, and the turn goes on (auto mode)', () => {
  for (const tool of TOOLS) {
    describe(tool.name, () => {
      for (const escape of ESCAPES) {
        it(`denies ${escape.name}`, async () => {
          const layout = await escapeLayout(tempDir);
          const { outcome, result } = await attempt(layout, tool.name, tool.args(escape, layout));
          expect(outcome).toEqual({ status: 'completed', finalText: 'could not' });
          expect(result).toMatchObject({ toolCallId: 'c1', toolName: tool.name, status: 'denied' });
          expect(result!.content).toMatch(/^denied by rule: /);
          expect(result!.content).toContain(escape.reason);
        });
      }
    });
  }

  const WRITES_THROUGH_LINKS = [
    { name: 'a new file through a symlinked directory', path: 'link-dir/new.txt' },
    { name: 'a new file in a new directory through a symlinked directory', path: 'link-dir/sub/new.txt' },
    { name: 'a dangling symlink whose target is outside', path: 'dangling' },
  ];
  for (const write of WRITES_THROUGH_LINKS) {
    it(`write_file denies creating ${write.name}`, async () => {
      const layout = await escapeLayout(tempDir);
      const { outcome, result } = await attempt(layout, 'write_file', { path: write.path, content: 'pwned' });
      expect(outcome).toEqual({ status: 'completed', finalText: 'could not' });
      expect(result).toMatchObject({ status: 'denied', content: `denied by rule: '${write.path}' ${THROUGH_LINK}` });
    });
  }

  it('allows an absolute path inside the root', async () => {
    const layout = await escapeLayout(tempDir);
    const { result } = await attempt(layout, 'read_file', { path: path.join(layout.root, 'hello.txt') });
    expect(result).toMatchObject({ status: 'succeeded', content: '1\thello secret' });
  });
});

describe('execute checks the path again (the filesystem may change after authorize)', () => {
  for (const tool of TOOLS) {
    it(`${tool.name} refuses an escaping path when its execute is reached directly`, async () => {
      const layout = await escapeLayout(tempDir);
      const before = await snapshot(layout.outside);
      const escape = ESCAPES.find((e) => e.name === 'a symlinked directory pointing outside')!;
      const result = await execute(toolNamed(tool.name, { root: layout.root }), tool.args(escape, layout));
      expect(result.status).toBe('failed');
      expect(result.content).toMatch(/^refused: '.*' leads outside the workspace through a symbolic link$/);
      expect(await snapshot(layout.outside)).toEqual(before);
    });
  }
});
