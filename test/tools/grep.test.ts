import { symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempDirs, writeTree } from '../support/workspace.js';
import { escapeLayout, execute, toolNamed } from './support.js';

const tempDir = useTempDirs('turnchart-grep-');

async function grepIn(files: Record<string, string>, args: object, limits: object = {}) {
  const root = await tempDir();
  await writeTree(root, files);
  return execute(toolNamed('grep', { root, ...limits }), args);
}

describe('grep', () => {
  it('reports path:line: text for every matching line, recursively, in name order', async () => {
    const result = await grepIn(
      { 'src/b.ts': 'const todo = 1;\nok\n// TODO later\n', 'src/a/deep.ts': 'TODO: deep\n', 'README.md': 'no match here\n' },
      { pattern: 'TODO|todo' },
    );
    expect(result).toEqual({ status: 'succeeded', content: 'src/a/deep.ts:1: TODO: deep\nsrc/b.ts:1: const todo = 1;\nsrc/b.ts:3: // TODO later' });
  });

  it('searches under path only, or one file', async () => {
    const files = { 'a/x.txt': 'hit\n', 'b/y.txt': 'hit\n' };
    expect((await grepIn(files, { pattern: 'hit', path: 'b' })).content).toBe('b/y.txt:1: hit');
    expect((await grepIn(files, { pattern: 'hit', path: 'a/x.txt' })).content).toBe('a/x.txt:1: hit');
  });

  it('filters file names with include', async () => {
    const files = { 'a.ts': 'hit\n', 'b.tsx': 'hit\n', 'c.md': 'hit\n', 'd/e.ts': 'hit\n' };
    expect((await grepIn(files, { pattern: 'hit', include: '*.ts' })).content).toBe('a.ts:1: hit\nd/e.ts:1: hit');
    expect((await grepIn(files, { pattern: 'hit', include: '*.{tsx,md}' })).content).toBe('b.tsx:1: hit\nc.md:1: hit');
  });

  it('skips .git, node_modules and binary files, and says how many files it skipped', async () => {
    const root = await tempDir();
    await writeTree(root, { '.git/config': 'hit\n', 'node_modules/p/i.js': 'hit\n', 'src/ok.js': 'hit\n' });
    await writeFile(path.join(root, 'src', 'blob.bin'), Buffer.from('hit\0hit'));
    expect(await execute(toolNamed('grep', { root }), { pattern: 'hit' })).toEqual({
      status: 'succeeded',
      content: 'src/ok.js:1: hit\n[skipped 1 files that are binary, not UTF-8, unreadable or too large]',
    });
  });

  it('does not follow symlinks that leave the root; follows those that stay inside, each real directory once', async () => {
    const { root } = await escapeLayout(tempDir);
    await writeTree(root, { 'a/inner.txt': 'secret inside\n', 'b/': '' });
    await symlink('../a', path.join(root, 'b', 'to-a'));
    await symlink('..', path.join(root, 'a', 'up'));
    const tool = toolNamed('grep', { root });
    // From the root, b/to-a leads to a directory already searched, and a/up back to the root: neither is searched twice.
    expect(await execute(tool, { pattern: 'secret' })).toEqual({ status: 'succeeded', content: 'a/inner.txt:1: secret inside\nhello.txt:1: hello secret' });
    expect(await execute(tool, { pattern: 'secret', path: 'b' })).toEqual({ status: 'succeeded', content: 'b/to-a/inner.txt:1: secret inside\nb/to-a/up/hello.txt:1: hello secret' });
  });

  it('fails for an invalid regular expression', async () => {
    expect(await grepIn({ 'a.txt': 'x' }, { pattern: '(unclosed' })).toEqual({
      status: 'failed',
      content: 'invalid regular expression: Invalid regular expression: /(unclosed/: Unterminated group',
    });
  });

  it('says when nothing matched', async () => {
    expect(await grepIn({ 'a.txt': 'x\n', 'b.txt': 'y\n' }, { pattern: 'zzz' })).toEqual({ status: 'succeeded', content: 'no matches in 2 files searched' });
  });

  it('stops at maxGrepMatches and at maxGrepFiles, saying so', async () => {
    const files = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`f${i}.txt`, 'hit\nhit\n']));
    expect((await grepIn(files, { pattern: 'hit' }, { maxGrepMatches: 3 })).content).toBe(
      'f0.txt:1: hit\nf0.txt:2: hit\nf1.txt:1: hit\n[stopped at 3 matching lines, there may be more; narrow the pattern or the path]',
    );
    expect((await grepIn(files, { pattern: 'hit' }, { maxGrepFiles: 1 })).content).toBe(
      'f0.txt:1: hit\nf0.txt:2: hit\n[stopped after searching 1 files; narrow the path or the include glob]',
    );
  });

  it('searches and shows only the first maxLineChars of a line', async () => {
    const line = `${'a'.repeat(20)}NEEDLE`;
    expect((await grepIn({ 'min.js': line }, { pattern: 'NEEDLE' }, { maxLineChars: 10 })).content).toBe('no matches in 1 files searched');
    expect((await grepIn({ 'min.js': line }, { pattern: 'a' }, { maxLineChars: 10 })).content).toBe('min.js:1: aaaaaaaaaa … [line cut at 10 of 26 characters]');
  });

  it('stops a catastrophically backtracking pattern at grepTimeoutMs instead of freezing the process', async () => {
    const result = await grepIn({ 'a.txt': 'fine\n', 'b.txt': `${'a'.repeat(40)}!\n` }, { pattern: '^(a+)+$|fine' }, { grepTimeoutMs: 1_000 });
    expect(result.status).toBe('failed');
    expect(result.content).toBe(
      'grep timed out after 1000 ms, having searched 2 files: the pattern may backtrack catastrophically, or there are too many files ' +
        '— simplify the pattern or narrow the path. Matches before then:\na.txt:1: fine',
    );
  });

  it('ends cancelled when its signal aborts, even on a pattern that would never finish', async () => {
    const root = await tempDir();
    await writeTree(root, { 'b.txt': `${'a'.repeat(40)}!\n` });
    const controller = new AbortController();
    const pending = execute(toolNamed('grep', { root, grepTimeoutMs: 600_000 }), { pattern: '^(a+)+$' }, controller.signal);
    controller.abort();
    expect(await pending).toEqual({ status: 'cancelled', content: 'grep cancelled' });
  });

  it('cuts long output with a note', async () => {
    const files = { 'a.txt': 'hit\n'.repeat(100) };
    const result = await grepIn(files, { pattern: 'hit' }, { maxOutputChars: 30 });
    expect(result.content).toMatch(/^a\.txt:1: hit\na\.txt:2: hit\na\.tx\n\[output truncated: \d+ of \d+ characters not shown\]$/);
  });
});
