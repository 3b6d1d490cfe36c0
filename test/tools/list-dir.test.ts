import { symlink } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempDirs, writeTree } from '../support/workspace.js';
import { execute, toolNamed } from './support.js';

const tempDir = useTempDirs('turnchart-list-');

describe('list_dir', () => {
  it('lists entries sorted by name, directories with /, links with @', async () => {
    const root = await tempDir();
    await writeTree(root, { 'b.txt': '', 'a/': '', 'C.md': '', 'z/inner.txt': '' });
    await symlink('b.txt', path.join(root, 'link'));
    const tool = toolNamed('list_dir', { root });
    expect(await execute(tool, {})).toEqual({ status: 'succeeded', content: 'C.md\na/\nb.txt\nlink@\nz/' });
    expect(await execute(tool, { path: 'z' })).toEqual({ status: 'succeeded', content: 'inner.txt' });
  });

  it('says when a directory is empty, and fails for a file or a missing path', async () => {
    const root = await tempDir();
    await writeTree(root, { 'empty/': '', 'f.txt': '' });
    const tool = toolNamed('list_dir', { root });
    expect(await execute(tool, { path: 'empty' })).toEqual({ status: 'succeeded', content: '(empty is empty)' });
    expect(await execute(tool, { path: 'f.txt' })).toEqual({ status: 'failed', content: "'f.txt' has a part that is not a directory" });
    expect(await execute(tool, { path: 'nope' })).toEqual({ status: 'failed', content: "'nope' does not exist" });
  });

  it('cuts a long listing with a note saying how much was cut', async () => {
    const root = await tempDir();
    await writeTree(root, Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`file-${String(i).padStart(2, '0')}.txt`, ''])));
    const result = await execute(toolNamed('list_dir', { root, maxOutputChars: 32 }), {});
    expect(result.content).toBe('file-00.txt\nfile-01.txt\nfile-02.\n[output truncated: 447 of 479 characters not shown]');
  });
});
