import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { captureProjectInstructions } from '../../../src/context/world-state/project-instructions.js';
import { useTempDirs } from './temp-dir.js';

const tempDir = useTempDirs();
const failure = { name: 'WorldStateError', code: 'project_instruction_error' };

describe('captureProjectInstructions', () => {
  it('wraps the file text as is, with its absolute path', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'AGENTS.md'), '# Rules\n\nUse tabs. ✓\n');
    expect(await captureProjectInstructions(dir)).toBe(
      `<project_instructions path="${path.join(dir, 'AGENTS.md')}">\n# Rules\n\nUse tabs. ✓\n\n</project_instructions>`,
    );
  });

  it('is absent when the file is missing', async () => {
    expect(await captureProjectInstructions(await tempDir())).toBeNull();
  });

  it('is absent when the file holds only whitespace', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'AGENTS.md'), ' \n\t\r\n  ');
    expect(await captureProjectInstructions(dir)).toBeNull();
  });

  it('reads only the workspace root, not a parent directory', async () => {
    const parent = await tempDir();
    await writeFile(path.join(parent, 'AGENTS.md'), 'parent rules');
    await mkdir(path.join(parent, 'child'));
    expect(await captureProjectInstructions(path.join(parent, 'child'))).toBeNull();
  });

  it('rejects a symbolic link, even to a valid file', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'real.md'), 'rules');
    await symlink(path.join(dir, 'real.md'), path.join(dir, 'AGENTS.md'));
    await expect(captureProjectInstructions(dir)).rejects.toMatchObject(failure);
  });

  it('rejects a directory named AGENTS.md', async () => {
    const dir = await tempDir();
    await mkdir(path.join(dir, 'AGENTS.md'));
    await expect(captureProjectInstructions(dir)).rejects.toMatchObject(failure);
  });

  it('accepts exactly 64 KiB and rejects 65 537 bytes', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'AGENTS.md'), 'a'.repeat(65_536));
    expect(await captureProjectInstructions(dir)).toContain('a'.repeat(65_536));
    await writeFile(path.join(dir, 'AGENTS.md'), 'a'.repeat(65_537));
    await expect(captureProjectInstructions(dir)).rejects.toMatchObject(failure);
  });

  it('rejects bytes that are not UTF-8', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'AGENTS.md'), Buffer.from([0xff, 0xfe, 0x41]));
    await expect(captureProjectInstructions(dir)).rejects.toMatchObject(failure);
  });
});

describe('captureProjectInstructions, sampled again', () => {
  it('shows a rewrite of the same size made right after the last sample, and the file going away', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'AGENTS.md');
    await writeFile(file, 'rule one');
    expect(await captureProjectInstructions(dir)).toContain('rule one');
    await writeFile(file, 'rule two');
    expect(await captureProjectInstructions(dir)).toContain('rule two');
    await rm(file);
    expect(await captureProjectInstructions(dir)).toBeNull();
  });
});
