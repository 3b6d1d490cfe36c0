import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { confine, isInside } from '../../src/tools/workspace/confine.js';
import { useTempDirs } from '../support/workspace.js';
import { escapeLayout } from './support.js';

const tempDir = useTempDirs('turnchart-confine-');

async function relativeOf(root: string, input: string) {
  const result = await confine(root, input);
  if (!result.ok) throw new Error(`denied: ${result.reason}`);
  return result.path.relative;
}

async function reasonFor(root: string, input: string) {
  const result = await confine(root, input);
  if (result.ok) throw new Error(`allowed as ${result.path.real}`);
  return result.reason;
}

describe('confine: where a path really leads', () => {
  it('allows paths inside the root, existing or not, relative or absolute', async () => {
    const { root } = await escapeLayout(tempDir);
    expect(await relativeOf(root, 'hello.txt')).toBe('hello.txt');
    expect(await relativeOf(root, '.')).toBe('.');
    expect(await relativeOf(root, 'a/./b/../c.txt')).toBe('a/c.txt');
    expect(await relativeOf(root, 'new/deeper/file.txt')).toBe('new/deeper/file.txt');
    expect(await relativeOf(root, path.join(root, 'a'))).toBe('a');
    expect(await relativeOf(root, '..inside-name')).toBe('..inside-name');
  });

  it('operates on the real path: a link inside that stays inside resolves to its target', async () => {
    const { root } = await escapeLayout(tempDir);
    await symlink('a', path.join(root, 'alias'));
    const result = await confine(root, 'alias/x.txt');
    expect(result).toEqual({ ok: true, path: { real: path.join(await realpath(root), 'a', 'x.txt'), root: await realpath(root), relative: 'a/x.txt' } });
  });

  it('allows an absolute path written through a symlinked root', async () => {
    const { base, root } = await escapeLayout(tempDir);
    const viaLink = path.join(base, 'ws-link');
    await symlink(root, viaLink);
    expect(await relativeOf(viaLink, path.join(viaLink, 'hello.txt'))).toBe('hello.txt');
    expect(await relativeOf(viaLink, path.join(root, 'hello.txt'))).toBe('hello.txt');
  });

  it('denies names that leave the root', async () => {
    const { root, outside } = await escapeLayout(tempDir);
    expect(await reasonFor(root, '../outside/secret.txt')).toBe("'../outside/secret.txt' is outside the workspace");
    expect(await reasonFor(root, 'a/../../x')).toBe("'a/../../x' is outside the workspace");
    expect(await reasonFor(root, '..')).toBe("'..' is outside the workspace");
    expect(await reasonFor(root, path.join(outside, 'secret.txt'))).toContain('is outside the workspace');
  });

  it('denies symlinks that lead out: to a file, to a directory, through it to a new file, and dangling', async () => {
    const { root } = await escapeLayout(tempDir);
    const through = 'leads outside the workspace through a symbolic link';
    expect(await reasonFor(root, 'link-file')).toBe(`'link-file' ${through}`);
    expect(await reasonFor(root, 'link-dir')).toBe(`'link-dir' ${through}`);
    expect(await reasonFor(root, 'link-dir/secret.txt')).toBe(`'link-dir/secret.txt' ${through}`);
    expect(await reasonFor(root, 'link-dir/new/deeper.txt')).toBe(`'link-dir/new/deeper.txt' ${through}`);
    expect(await reasonFor(root, 'dangling')).toBe(`'dangling' ${through}`);
  });

  it('follows a chain of dangling links to where a write would land', async () => {
    const { root } = await escapeLayout(tempDir);
    await symlink('dangling', path.join(root, 'chain'));
    expect(await reasonFor(root, 'chain')).toContain('through a symbolic link');
    await symlink(path.join(root, 'a', 'later.txt'), path.join(root, 'inside-dangling'));
    expect(await relativeOf(root, 'inside-dangling')).toBe('a/later.txt');
  });

  it('denies a NUL byte and a symlink loop with a reason', async () => {
    const { root } = await escapeLayout(tempDir);
    expect(await reasonFor(root, 'hello.txt\0.png')).toBe('the path contains a NUL byte');
    await symlink('loop-b', path.join(root, 'loop-a'));
    await symlink('loop-a', path.join(root, 'loop-b'));
    expect(await reasonFor(root, 'loop-a/x')).toBe("'loop-a/x' cannot be resolved (ELOOP)");
  });

  it('resolves a path below a file to the file’s place (the operation then fails, inside)', async () => {
    const { root } = await escapeLayout(tempDir);
    await mkdir(path.join(root, 'd'));
    await writeFile(path.join(root, 'd', 'f'), '');
    expect(await relativeOf(root, 'd/f/g')).toBe('d/f/g');
  });
});

describe('isInside', () => {
  it('is by path segment, not by string prefix', () => {
    expect(isInside('/w', '/w')).toBe(true);
    expect(isInside('/w', '/w/a')).toBe(true);
    expect(isInside('/w', '/w/..a')).toBe(true);
    expect(isInside('/w', '/wx')).toBe(false);
    expect(isInside('/w', '/')).toBe(false);
    expect(isInside('/w/a', '/w')).toBe(false);
  });
});
