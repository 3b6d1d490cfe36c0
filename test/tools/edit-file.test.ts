import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { occurrences } from '../../src/tools/workspace/edit-file.js';
import { useTempDirs, writeTree } from '../support/workspace.js';
import { execute, toolNamed } from './support.js';

const tempDir = useTempDirs('turnchart-edit-');

async function editIn(text: string, oldText: string, newText: string) {
  const root = await tempDir();
  await writeTree(root, { 'f.ts': text });
  const result = await execute(toolNamed('edit_file', { root }), { path: 'f.ts', oldText, newText });
  return { result, after: await readFile(path.join(root, 'f.ts'), 'utf8') };
}

describe('edit_file', () => {
  it('replaces the one exact occurrence', async () => {
    expect(await editIn('const a = 1;\nconst b = 2;\n', 'b = 2', 'b = 3')).toEqual({
      result: { status: 'succeeded', content: 'edited f.ts: replaced 1 occurrence' },
      after: 'const a = 1;\nconst b = 3;\n',
    });
  });

  it('refuses, file unchanged, when oldText is not found', async () => {
    expect(await editIn('abc\n', 'xyz', 'q')).toEqual({
      result: { status: 'failed', content: "oldText was not found in 'f.ts'; the file is unchanged" },
      after: 'abc\n',
    });
  });

  it('refuses, file unchanged, when oldText occurs more than once, saying how many times', async () => {
    expect(await editIn('x = 1;\nx = 1;\nx = 1;\n', 'x = 1;', 'x = 2;')).toEqual({
      result: { status: 'failed', content: "oldText occurs 3 times in 'f.ts'; it must occur exactly once. The file is unchanged" },
      after: 'x = 1;\nx = 1;\nx = 1;\n',
    });
  });

  it('counts overlapping occurrences as ambiguous', async () => {
    expect(occurrences('aaa', 'aa')).toBe(2);
    expect((await editIn('aaa', 'aa', 'b')).result.content).toContain('occurs 2 times');
  });

  it('writes newText literally, `$&` and all', async () => {
    expect((await editIn('price: X\n', 'X', '$& $1 $$')).after).toBe('price: $& $1 $$\n');
  });

  it('refuses a binary file, leaving it as it was', async () => {
    const root = await tempDir();
    const bytes = Buffer.from([0x61, 0x00, 0x62]);
    await writeFile(path.join(root, 'b.bin'), bytes);
    const result = await execute(toolNamed('edit_file', { root }), { path: 'b.bin', oldText: 'a', newText: 'c' });
    expect(result).toEqual({ status: 'failed', content: "'b.bin' looks like a binary file (it contains NUL bytes)" });
    expect(await readFile(path.join(root, 'b.bin'))).toEqual(bytes);
  });

  it('refuses a file larger than maxFileBytes rather than reading it whole', async () => {
    const root = await tempDir();
    await writeTree(root, { 'big.txt': 'x'.repeat(100) });
    const result = await execute(toolNamed('edit_file', { root, maxFileBytes: 10 }), { path: 'big.txt', oldText: 'x', newText: 'y' });
    expect(result).toEqual({ status: 'failed', content: "'big.txt' is 100 bytes, larger than the 10-byte limit" });
  });

  it('keeps a byte-order mark', async () => {
    expect((await editIn('\uFEFFhello', 'hello', 'bye')).after).toBe('\uFEFFbye');
  });

  it('rejects an empty oldText in its schema', () => {
    expect(toolNamed('edit_file', { root: '/tmp' }).input.safeParse({ path: 'a', oldText: '', newText: 'x' }).success).toBe(false);
  });
});
