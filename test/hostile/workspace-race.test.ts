import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { link, mkdir, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { useTempDirs } from '../support/workspace.js';
import { execute, snapshot, toolNamed } from '../tools/support.js';

/**
 * Finding 3 of the security probe (issue 22): a check-then-open race. The probe swapped `ws/d` (a
 * directory) with `ws/x` (a symbolic link to a directory outside) in a loop with
 * `renameat2(RENAME_EXCHANGE)`, while the tools ran on `d/…`: 58 of 960 `read_file` calls returned
 * the outside file, 24 `write_file`s landed outside, `grep` reported 7 outside hits. The same
 * attack runs here, from a second process, against the tools' own `execute`.
 *
 * Finding 4: a hard link made beforehand inside the workspace to an outside file was rewritten in place.
 */

const tempDir = useTempDirs('turnchart-race-');

let swapper: ChildProcess | undefined;
afterEach(() => {
  swapper?.kill('SIGKILL');
  swapper = undefined;
});

const CALLS = 400;

interface Layout {
  root: string;
  outside: string;
}

async function layout(): Promise<Layout> {
  const base = await tempDir();
  const root = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await mkdir(path.join(root, 'd'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(root, 'd', 'f.txt'), 'inside\n');
  await writeFile(path.join(outside, 'f.txt'), 'OUTSIDE SECRET\n');
  await symlink(outside, path.join(root, 'x'));
  return { root, outside };
}

const PYTHON_EXCHANGE = `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
if libc.renameat2(-100, a, -100, b, 2) != 0:
    sys.exit('renameat2: errno %d' % ctypes.get_errno())
print('ready', flush=True)
while True:
    libc.renameat2(-100, a, -100, b, 2)
`;

/** Without python3, the same swap as four renames (there are then moments with no `d` at all). */
const NODE_RENAMES = `
const { renameSync } = require('node:fs');
const [a, b] = process.argv.slice(1);
const t = a + '.t';
console.log('ready');
for (;;) { try { renameSync(a, t); renameSync(b, a); renameSync(a, b); renameSync(t, a); } catch {} }
`;

/** Starts swapping `a` and `b` in another process; resolves once the first swap is done. */
async function startSwapping(a: string, b: string): Promise<void> {
  const python = spawnSync('python3', ['-c', 'import ctypes; ctypes.CDLL(None).renameat2'], { stdio: 'ignore' }).status === 0;
  const child = python ? spawn('python3', ['-c', PYTHON_EXCHANGE, a, b]) : spawn(process.execPath, ['-e', NODE_RENAMES, a, b]);
  swapper = child;
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the swapper exited (${code}): ${errors}`)));
  });
}

// Hundreds of tool calls each, on a machine shared with the other test files.
describe('the tools under a concurrent directory-for-symlink swap (probe finding 3)', { timeout: 60_000 }, () => {
  it('read_file never returns the outside file', async () => {
    const { root } = await layout();
    await startSwapping(path.join(root, 'd'), path.join(root, 'x'));
    const tool = toolNamed('read_file', { root });
    const contents: string[] = [];
    for (let i = 0; i < CALLS; i += 1) contents.push((await execute(tool, { path: 'd/f.txt' })).content);
    expect(contents.filter((c) => c.includes('OUTSIDE'))).toEqual([]);
    // The attack really raced: some reads found the directory, some were refused mid-walk.
    expect(contents.some((c) => c.includes('inside'))).toBe(true);
  });

  it('write_file and edit_file never create or change a file outside', async () => {
    const { root, outside } = await layout();
    const before = await snapshot(outside);
    await startSwapping(path.join(root, 'd'), path.join(root, 'x'));
    const write = toolNamed('write_file', { root });
    const edit = toolNamed('edit_file', { root });
    const statuses: string[] = [];
    for (let i = 0; i < CALLS; i += 1) {
      statuses.push((await execute(write, { path: `d/new-${i}.txt`, content: 'pwned' })).status);
      statuses.push((await execute(write, { path: `d/sub-${i}/new.txt`, content: 'pwned' })).status);
      statuses.push((await execute(edit, { path: 'd/f.txt', oldText: 'SECRET', newText: 'pwned' })).status);
    }
    swapper!.kill('SIGKILL');
    expect(await snapshot(outside)).toEqual(before);
    expect(statuses).toContain('succeeded');
  });

  it('grep never reports a line of the outside file', async () => {
    const { root } = await layout();
    await startSwapping(path.join(root, 'd'), path.join(root, 'x'));
    const grep = toolNamed('grep', { root });
    const outputs: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      outputs.push((await execute(grep, { pattern: 'SECRET|inside' })).content);
      outputs.push((await execute(grep, { pattern: 'SECRET|inside', path: 'd' })).content);
    }
    expect(outputs.filter((o) => o.includes('OUTSIDE'))).toEqual([]);
    expect(outputs.some((o) => o.includes('inside'))).toBe(true);
  });

  it('list_dir never lists the outside directory', async () => {
    const { root, outside } = await layout();
    await writeFile(path.join(outside, 'only-outside.txt'), '');
    await startSwapping(path.join(root, 'd'), path.join(root, 'x'));
    const list = toolNamed('list_dir', { root });
    const outputs: string[] = [];
    for (let i = 0; i < CALLS; i += 1) outputs.push((await execute(list, { path: 'd' })).content);
    expect(outputs.filter((o) => o.includes('only-outside'))).toEqual([]);
  });
});

describe('a hard link to an outside file (probe finding 4)', () => {
  it('write_file and edit_file refuse it, saying why, and the outside file keeps its content', async () => {
    const { root, outside } = await layout();
    await link(path.join(outside, 'f.txt'), path.join(root, 'hardlink'));
    const write = await execute(toolNamed('write_file', { root }), { path: 'hardlink', content: 'pwned' });
    expect(write).toMatchObject({ status: 'failed' });
    expect(write.content).toContain("'hardlink' has 2 hard links");
    const edit = await execute(toolNamed('edit_file', { root }), { path: 'hardlink', oldText: 'SECRET', newText: 'pwned' });
    expect(edit).toMatchObject({ status: 'failed' });
    expect(edit.content).toContain('hard links');
    expect(await readFile(path.join(outside, 'f.txt'), 'utf8')).toBe('OUTSIDE SECRET\n');
  });

  it('a file with one link is replaced whole, keeping its mode, and leaves no temporary file', async () => {
    const { root } = await layout();
    await writeFile(path.join(root, 'script.sh'), 'echo old\n', { mode: 0o750 });
    const written = await execute(toolNamed('write_file', { root }), { path: 'script.sh', content: 'echo new\n' });
    expect(written).toMatchObject({ status: 'succeeded' });
    expect(await readFile(path.join(root, 'script.sh'), 'utf8')).toBe('echo new\n');
    expect((await stat(path.join(root, 'script.sh'))).mode & 0o777).toBe(0o750);
    expect((await readdir(root)).filter((name) => name.includes('turnchart'))).toEqual([]);
  });
});

describe('a path nested deeper than the tools descend', () => {
  it('is refused with the reason before any directory is made', async () => {
    const { root } = await layout();
    const deep = `${'d/'.repeat(2_000)}x.txt`;
    const written = await execute(toolNamed('write_file', { root }), { path: deep, content: 'x' });
    expect(written).toMatchObject({ status: 'failed' });
    expect(written.content).toContain('more than 128 directories deep');
    expect(await readdir(path.join(root, 'd'))).toEqual(['f.txt']);
  });
});
