import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempDirs, writeTree } from '../support/workspace.js';
import { execute, toolNamed } from './support.js';

const tempDir = useTempDirs('turnchart-read-');

async function readIn(files: Record<string, string>, args: object, limits: object = {}) {
  const root = await tempDir();
  await writeTree(root, files);
  return execute(toolNamed('read_file', { root, ...limits }), args);
}

describe('read_file', () => {
  it('returns numbered lines', async () => {
    expect(await readIn({ 'a.txt': 'one\ntwo\nthree\n' }, { path: 'a.txt' })).toEqual({ status: 'succeeded', content: '1\tone\n2\ttwo\n3\tthree' });
  });

  it('selects lines with a 1-based offset and a limit, numbering stays the file’s', async () => {
    const text = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n');
    expect(await readIn({ 'a.txt': text }, { path: 'a.txt', offset: 9, limit: 2 })).toEqual({ status: 'succeeded', content: ' 9\tline 9\n10\tline 10' });
    expect((await readIn({ 'a.txt': text }, { path: 'a.txt', offset: 11 })).content).toBe('11\tline 11\n12\tline 12');
  });

  it('fails for an offset past the end, and reads an empty file as empty', async () => {
    expect(await readIn({ 'a.txt': 'x\ny\n' }, { path: 'a.txt', offset: 3 })).toEqual({ status: 'failed', content: "'a.txt' has 2 lines; offset 3 is past the end" });
    expect(await readIn({ 'e.txt': '' }, { path: 'e.txt' })).toEqual({ status: 'succeeded', content: '(empty file)' });
  });

  it('drops CR of CRLF line ends and keeps a line without a final newline', async () => {
    expect((await readIn({ 'w.txt': 'a\r\nb' }, { path: 'w.txt' })).content).toBe('1\ta\n2\tb');
  });

  it('refuses binary and non-UTF-8 files politely', async () => {
    const root = await tempDir();
    await writeFile(path.join(root, 'img.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    await writeFile(path.join(root, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    const tool = toolNamed('read_file', { root });
    expect(await execute(tool, { path: 'img.png' })).toEqual({ status: 'failed', content: "'img.png' looks like a binary file (it contains NUL bytes)" });
    expect(await execute(tool, { path: 'latin1.txt' })).toEqual({ status: 'failed', content: "'latin1.txt' is not valid UTF-8 text" });
  });

  it('fails with the workspace path for a missing file and a directory', async () => {
    expect(await readIn({ 'd/': '' }, { path: 'nope.txt' })).toEqual({ status: 'failed', content: "'nope.txt' does not exist" });
    expect(await readIn({ 'd/': '' }, { path: 'd' })).toEqual({ status: 'failed', content: "'d' is a directory" });
  });

  it('refuses a FIFO instead of waiting for a writer', async () => {
    const root = await tempDir();
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    expect(await execute(toolNamed('read_file', { root }), { path: 'pipe' })).toEqual({ status: 'failed', content: "'pipe' is not a regular file" });
  });

  it('reads only the first maxFileBytes of a large file, whole lines, and says so', async () => {
    const text = Array.from({ length: 100 }, (_, i) => `line ${String(i + 1).padStart(3, '0')}`).join('\n'); // 8 bytes and a newline each
    const result = await readIn({ 'big.log': text }, { path: 'big.log' }, { maxFileBytes: 25 });
    expect(result).toEqual({
      status: 'succeeded',
      content: "1\tline 001\n2\tline 002\n[file is 899 bytes; only the lines in its first 25 bytes can be read — use grep or run_command for the rest]",
    });
  });

  it('does not count a multi-byte character cut at the read limit as bad UTF-8', async () => {
    const result = await readIn({ 'u.txt': 'ab\n' + 'é'.repeat(10) }, { path: 'u.txt' }, { maxFileBytes: 6 });
    expect(result.status).toBe('succeeded');
    expect(result.content.startsWith('1\tab\n')).toBe(true);
  });

  it('cuts output at maxOutputChars with a note saying how much and where to read on', async () => {
    const text = Array.from({ length: 50 }, (_, i) => `row ${i + 1}`).join('\n');
    const result = await readIn({ 'a.txt': text }, { path: 'a.txt' }, { maxOutputChars: 60 });
    expect(result.status).toBe('succeeded');
    const [shown, note] = result.content.split('\n[');
    expect(shown).toBe(' 1\trow 1\n 2\trow 2\n 3\trow 3\n 4\trow 4\n 5\trow 5\n 6\trow 6');
    expect(note).toBe('output truncated: 44 of 50 lines not shown; read on with offset=7]');
  });

  it('cuts a very long line and marks the cut', async () => {
    const result = await readIn({ 'min.js': 'x'.repeat(30) }, { path: 'min.js' }, { maxLineChars: 10 });
    expect(result.content).toBe('1\txxxxxxxxxx … [line cut at 10 of 30 characters]');
  });

  it('validates its input: non-empty path, positive integer offset and limit', () => {
    const tool = toolNamed('read_file', { root: '/tmp' });
    expect(tool.input.safeParse({ path: '' }).success).toBe(false);
    expect(tool.input.safeParse({ path: 'a', offset: 0 }).success).toBe(false);
    expect(tool.input.safeParse({ path: 'a', limit: 1.5 }).success).toBe(false);
    expect(tool.input.safeParse({ path: 'x'.repeat(5_000) }).success).toBe(false);
    expect(tool.input.safeParse({ path: 'a', offset: 2, limit: 3 }).success).toBe(true);
  });
});
