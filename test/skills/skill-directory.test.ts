import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { listSkills, resolveSkill, skillInstructionText } from '../../src/skills/skill-directory.js';
import { useTempDirs } from '../context/world-state/temp-dir.js';
import { writeSkill } from './skill-fixtures.js';

const tempDir = useTempDirs();

describe('listSkills', () => {
  it('lists skills by folder name, sorted, with their descriptions and absolute paths', async () => {
    const dir = await tempDir();
    const zeta = await writeSkill(dir, 'zeta', '---\nname: other-name\ndescription: Last one\n---\nZ');
    const alpha = await writeSkill(dir, 'alpha', 'No frontmatter');
    expect(await listSkills({ dir })).toEqual({
      skills: [
        { name: 'alpha', description: '', path: alpha },
        { name: 'zeta', description: 'Last one', path: zeta },
      ],
      warnings: [],
    });
  });

  it('excludes disabled skills without reading them', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'on', 'x');
    await writeSkill(dir, 'off', '---\nbroken');
    const { skills, warnings } = await listSkills({ dir, disabled: ['off'] });
    expect(skills.map((s) => s.name)).toEqual(['on']);
    expect(warnings).toEqual([]);
  });

  it('warns about a folder without SKILL.md or with an invalid one, and keeps the rest', async () => {
    const dir = await tempDir();
    await mkdir(path.join(dir, 'empty'));
    await writeSkill(dir, 'unclosed', '---\ndescription: x\n');
    await writeSkill(dir, 'binary', Buffer.from([0xff, 0xfe]));
    await writeSkill(dir, 'good', 'ok');
    await writeFile(path.join(dir, 'loose-file.md'), 'not a skill folder');

    const { skills, warnings } = await listSkills({ dir });
    expect(skills.map((s) => s.name)).toEqual(['good']);
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatch(/^skill binary: /);
    expect(warnings[1]).toBe('skill empty: no SKILL.md');
    expect(warnings[2]).toMatch(/^skill unclosed: .*not closed/);
  });

  it('has no skills and no warnings when the directory is missing', async () => {
    expect(await listSkills({ dir: path.join(await tempDir(), 'nope') })).toEqual({ skills: [], warnings: [] });
  });

  it('fails with skill_catalog_task_error when the directory is a file', async () => {
    const file = path.join(await tempDir(), 'skills');
    await writeFile(file, '');
    await expect(listSkills({ dir: file })).rejects.toMatchObject({ name: 'WorldStateError', code: 'skill_catalog_task_error' });
  });
});

describe('resolveSkill', () => {
  it('snapshots the body at resolution time', async () => {
    const dir = await tempDir();
    const file = await writeSkill(dir, 'review', '---\ndescription: d\n---\nRead the diff.');
    const resolution = await resolveSkill({ dir }, 'review');
    await writeFile(file, 'changed later');
    expect(resolution).toEqual({ ok: true, skill: { name: 'review', path: file, body: 'Read the diff.' } });
  });

  it('is UnknownSkill with no config, an unknown name, a disabled skill or a path-like name', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'off', 'x');
    await writeSkill(path.join(dir, 'nested'), 'inner', 'x');
    const unknown = (name: string) => ({ ok: false, error: { code: 'UnknownSkill', name } });
    expect(await resolveSkill(null, 'off')).toEqual(unknown('off'));
    expect(await resolveSkill({ dir }, 'missing')).toEqual(unknown('missing'));
    expect(await resolveSkill({ dir, disabled: ['off'] }, 'off')).toEqual(unknown('off'));
    expect(await resolveSkill({ dir }, 'nested/inner')).toEqual(unknown('nested/inner'));
    expect(await resolveSkill({ dir: path.join(dir, 'nested') }, '../off')).toEqual(unknown('../off'));
  });

  it('is SkillTooLarge at 8 000 estimated tokens and ok just below', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'big', 'a'.repeat(32_001)); // JSON adds 2 quote bytes: ceil(32 003 / 4) = 8 001
    await writeSkill(dir, 'edge', 'a'.repeat(31_994)); // ceil(31 996 / 4) = 7 999
    expect(await resolveSkill({ dir }, 'big')).toEqual({ ok: false, error: { code: 'SkillTooLarge', name: 'big', tokens: 8_001 } });
    expect((await resolveSkill({ dir }, 'edge')).ok).toBe(true);
  });
});

describe('skillInstructionText', () => {
  it('wraps the snapshot body in a skill tag', () => {
    expect(skillInstructionText({ name: 'review', path: '/s/review/SKILL.md', body: 'Read the diff.' })).toBe(
      '<skill name="review" path="/s/review/SKILL.md">\nRead the diff.\n</skill>',
    );
  });
});

describe('listSkills, sampled again', () => {
  it('shows a skill added, a description rewritten and a SKILL.md removed right after the last sample', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'alpha', '---\ndescription: first\n---\nA');
    expect((await listSkills({ dir })).skills.map((s) => s.description)).toEqual(['first']);
    await writeSkill(dir, 'alpha', '---\ndescription: again\n---\nA');
    await writeSkill(dir, 'beta', '---\ndescription: new\n---\nB');
    expect((await listSkills({ dir })).skills.map((s) => `${s.name}: ${s.description}`)).toEqual(['alpha: again', 'beta: new']);
    await rm(path.join(dir, 'alpha', 'SKILL.md'));
    const third = await listSkills({ dir });
    expect(third.skills.map((s) => s.name)).toEqual(['beta']);
    expect(third.warnings).toEqual(['skill alpha: no SKILL.md']);
  });
});
