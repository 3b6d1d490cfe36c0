import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempDirs, writeTree } from '../support/workspace.js';
import { execute, toolNamed } from './support.js';

const tempDir = useTempDirs('turnchart-write-');

describe('write_file', () => {
  it('creates a file and its missing parent directories inside the root', async () => {
    const root = await tempDir();
    const result = await execute(toolNamed('write_file', { root }), { path: 'src/deep/new.ts', content: 'export const é = 1;\n' });
    expect(result).toEqual({ status: 'succeeded', content: 'wrote 21 bytes to src/deep/new.ts' });
    expect(await readFile(path.join(root, 'src/deep/new.ts'), 'utf8')).toBe('export const é = 1;\n');
  });

  it('overwrites an existing file whole', async () => {
    const root = await tempDir();
    await writeTree(root, { 'a.txt': 'a much longer old text' });
    await execute(toolNamed('write_file', { root }), { path: 'a.txt', content: 'new' });
    expect(await readFile(path.join(root, 'a.txt'), 'utf8')).toBe('new');
  });

  it('fails for a directory and for the root itself', async () => {
    const root = await tempDir();
    await writeTree(root, { 'd/': '' });
    const tool = toolNamed('write_file', { root });
    expect(await execute(tool, { path: 'd', content: 'x' })).toEqual({ status: 'failed', content: "'d' is a directory" });
    expect(await execute(tool, { path: '.', content: 'x' })).toEqual({ status: 'failed', content: 'the workspace root is a directory, not a file' });
  });

  it('refuses a FIFO instead of waiting for a reader', async () => {
    const root = await tempDir();
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    expect(await execute(toolNamed('write_file', { root }), { path: 'pipe', content: 'x' })).toEqual({ status: 'failed', content: "'pipe' is not a regular file" });
  });

  it('bounds the content by maxFileBytes in its schema', () => {
    const tool = toolNamed('write_file', { root: '/tmp', maxFileBytes: 4 });
    expect(tool.input.safeParse({ path: 'a', content: '1234' }).success).toBe(true);
    expect(tool.input.safeParse({ path: 'a', content: '12345' }).success).toBe(false);
    expect(tool.input.safeParse({ path: '', content: '' }).success).toBe(false);
  });
});
