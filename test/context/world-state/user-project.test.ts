import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { captureUserProjectContext } from '../../../src/context/world-state/user-project.js';
import { useTempDirs } from './temp-dir.js';
import { WorldStateError } from '../../../src/protocol/errors.js';

const tempDir = useTempDirs();

describe('captureUserProjectContext', () => {
  it('renders the exact block: sorted entries, directories with a slash, no repository', async () => {
    const dir = await tempDir();
    await mkdir(path.join(dir, 'src'));
    await writeFile(path.join(dir, 'b.txt'), '');
    await writeFile(path.join(dir, 'README.md'), '');
    await mkdir(path.join(dir, 'a'));

    expect(await captureUserProjectContext(dir)).toBe(
      [
        '<user_project_context format_version="1">',
        `working_directory: ${dir}`,
        'repository_root: none',
        'top_level_entries:',
        '- README.md', // code-unit order: uppercase before lowercase
        '- a/',
        '- b.txt',
        '- src/',
        '</user_project_context>',
      ].join('\n'),
    );
  });

  it('lists the repository root found two levels up, not the working directory', async () => {
    const root = await tempDir();
    await mkdir(path.join(root, '.git'));
    await writeFile(path.join(root, 'package.json'), '{}');
    const workspace = path.join(root, 'packages', 'app');
    await mkdir(workspace, { recursive: true });
    await writeFile(path.join(workspace, 'inner.ts'), '');

    const text = await captureUserProjectContext(workspace);
    expect(text).toContain(`working_directory: ${workspace}\nrepository_root: ${root}\n`);
    expect(text).toContain('top_level_entries:\n- .git/\n- package.json\n- packages/\n</user_project_context>');
    expect(text).not.toContain('inner.ts');
  });

  it('accepts a .git file (a worktree) as the repository marker', async () => {
    const root = await tempDir();
    await writeFile(path.join(root, '.git'), 'gitdir: /elsewhere\n');
    const workspace = path.join(root, 'sub');
    await mkdir(workspace);
    expect(await captureUserProjectContext(workspace)).toContain(`repository_root: ${root}\n`);
  });

  it('lists at most 64 entries, then one line counting the rest', async () => {
    const dir = await tempDir();
    const names = Array.from({ length: 70 }, (_, i) => `f${String(i).padStart(2, '0')}`);
    await Promise.all(names.map((n) => writeFile(path.join(dir, n), '')));

    const lines = (await captureUserProjectContext(dir)).split('\n');
    const listed = lines.filter((l) => l.startsWith('- '));
    expect(listed).toEqual(names.slice(0, 64).map((n) => `- ${n}`));
    expect(lines.at(-2)).toBe('… and 6 more entries');
    expect(lines.at(-1)).toBe('</user_project_context>');
  });

  it('has no omission line at exactly 64 entries', async () => {
    const dir = await tempDir();
    await Promise.all(Array.from({ length: 64 }, (_, i) => writeFile(path.join(dir, `e${i}`), '')));
    const text = await captureUserProjectContext(dir);
    expect(text.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(64);
    expect(text).not.toContain('more entries');
  });

  it('fails with user_project_context_error when the text exceeds 16 384 characters', async () => {
    const dir = await tempDir();
    // 64 names of 255 characters: about 16 500 characters of listing alone.
    await Promise.all(Array.from({ length: 64 }, (_, i) => writeFile(path.join(dir, String(i).padStart(2, '0') + 'x'.repeat(253)), '')));
    await expect(captureUserProjectContext(dir)).rejects.toMatchObject({
      name: 'WorldStateError',
      code: 'user_project_context_error',
      message: expect.stringMatching(/characters exceed 16384$/) as unknown,
    });
  });

  it('fails with user_project_context_error for a missing directory or a file', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'file'), '');
    for (const target of [path.join(dir, 'missing'), path.join(dir, 'file')]) {
      const error: unknown = await captureUserProjectContext(target).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WorldStateError);
      expect((error as WorldStateError).code).toBe('user_project_context_error');
    }
  });
});

describe('captureUserProjectContext, sampled again', () => {
  it('shows an entry added right after the last sample, and a .git made since', async () => {
    const root = await tempDir();
    const workspace = path.join(root, 'app');
    await mkdir(workspace);
    const first = await captureUserProjectContext(workspace);
    expect(first).toContain('repository_root: none');
    await writeFile(path.join(workspace, 'added.ts'), '');
    expect(await captureUserProjectContext(workspace)).toContain('- added.ts');
    await mkdir(path.join(root, '.git'));
    const third = await captureUserProjectContext(workspace);
    expect(third).toContain(`repository_root: ${root}\n`);
    expect(third).toContain('- app/');
  });
});
