import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_SKILL_FILE_BYTES } from '../../src/skills/limits.js';
import { listSkills, resolveSkill } from '../../src/skills/skill-directory.js';
import { useTempDirs } from '../context/world-state/temp-dir.js';
import { useFifos } from './fifo.js';
import { linkSkillFile, writeSkill } from './skill-fixtures.js';

const tempDir = useTempDirs();
const mkfifo = useFifos();
const unknown = (name: string) => ({ ok: false, error: { code: 'UnknownSkill', name } });

/** The catalog's warnings and what selecting `name` gives, for a directory holding one skill. */
async function judge(dir: string, name: string) {
  const { skills, warnings } = await listSkills({ dir });
  return { listed: skills.map((s) => s.name), warnings, selected: await resolveSkill({ dir }, name) };
}

describe('skill file rules (listSkills and resolveSkill alike)', () => {
  it('a skill folder that is a link is refused, wherever it points', async () => {
    const root = await tempDir();
    const dir = path.join(root, 'skills');
    await writeSkill(root, 'outside', 'outside body');
    await writeSkill(dir, 'inside', 'inside body');
    await symlink(path.join(root, 'outside'), path.join(dir, 'out-link'));
    await symlink(path.join(dir, 'inside'), path.join(dir, 'in-link'));
    const { skills, warnings } = await listSkills({ dir });
    expect(skills.map((s) => s.name)).toEqual(['inside']);
    expect(warnings).toEqual(['skill in-link: folder is a symbolic link', 'skill out-link: folder is a symbolic link']);
    expect(await resolveSkill({ dir }, 'out-link')).toEqual(unknown('out-link'));
    expect(await resolveSkill({ dir }, 'in-link')).toEqual(unknown('in-link'));
  });

  it('a SKILL.md that is a link is refused, even to a file in its own folder or to nothing', async () => {
    const dir = await tempDir();
    await linkSkillFile(dir, 'own', 'real.md');
    await writeFile(path.join(dir, 'own', 'real.md'), 'body');
    await linkSkillFile(dir, 'dangling', 'gone.md');
    const { skills, warnings } = await listSkills({ dir });
    expect(skills).toEqual([]);
    expect(warnings).toEqual(['skill dangling: SKILL.md is a symbolic link', 'skill own: SKILL.md is a symbolic link']);
    expect(await resolveSkill({ dir }, 'own')).toEqual(unknown('own'));
  });

  it('a SKILL.md that is a directory or a FIFO is not a regular file; the FIFO is never opened', async () => {
    const dir = await tempDir();
    await mkdir(path.join(dir, 'folder', 'SKILL.md'), { recursive: true });
    await mkfifo(path.join(dir, 'pipe', 'SKILL.md'));
    const { skills, warnings } = await listSkills({ dir });
    expect(skills).toEqual([]);
    expect(warnings).toEqual(['skill folder: SKILL.md is not a regular file', 'skill pipe: SKILL.md is not a regular file']);
    expect(await resolveSkill({ dir }, 'pipe')).toEqual(unknown('pipe'));
  });

  it(`accepts a SKILL.md of exactly ${MAX_SKILL_FILE_BYTES} bytes and refuses one byte more unread`, async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'edge', `---\ndescription: edge\n---\n`.padEnd(MAX_SKILL_FILE_BYTES, 'a'));
    // Within the file limit, a body this size is still over the token limit: that stays SkillTooLarge.
    expect(await judge(dir, 'edge')).toEqual({
      listed: ['edge'],
      warnings: [],
      selected: { ok: false, error: { code: 'SkillTooLarge', name: 'edge', tokens: expect.any(Number) } },
    });
    await writeSkill(dir, 'edge', 'a'.repeat(MAX_SKILL_FILE_BYTES + 1));
    expect(await judge(dir, 'edge')).toEqual({
      listed: [],
      warnings: [`skill edge: SKILL.md has ${MAX_SKILL_FILE_BYTES + 1} bytes, over the limit of ${MAX_SKILL_FILE_BYTES}`],
      selected: unknown('edge'),
    });
  });

  it('accepts a description of 1 024 characters and refuses 1 025', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'wordy', `---\ndescription: ${'é'.repeat(1_024)}\n---\nbody`);
    expect((await judge(dir, 'wordy')).selected.ok).toBe(true);
    await writeSkill(dir, 'wordy', `---\ndescription: ${'é'.repeat(1_025)}\n---\nbody`);
    expect(await judge(dir, 'wordy')).toEqual({
      listed: [],
      warnings: ['skill wordy: description has 1025 characters, over the limit of 1024'],
      selected: unknown('wordy'),
    });
  });

  it('refuses a SKILL.md that is not UTF-8 as a selection too', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'binary', Buffer.from([0x2d, 0xff, 0xfe]));
    expect(await judge(dir, 'binary')).toEqual({ listed: [], warnings: ['skill binary: SKILL.md is not valid UTF-8'], selected: unknown('binary') });
  });

  it('a loose file named like a skill cannot be selected', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'notes'), 'not a folder');
    expect(await judge(dir, 'notes')).toEqual({ listed: [], warnings: [], selected: unknown('notes') });
  });
});
