import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { captureSkillCatalog } from '../../../src/context/world-state/skill-catalog.js';
import { writeSkill } from '../../skills/skill-fixtures.js';
import { useTempDirs } from './temp-dir.js';

const tempDir = useTempDirs();

describe('captureSkillCatalog', () => {
  it('lists enabled skills in name order and returns scan warnings separately', async () => {
    const dir = await tempDir();
    const review = await writeSkill(dir, 'review', '---\ndescription: Review a diff\n---\nbody');
    const bare = await writeSkill(dir, 'bare', 'body');
    await writeSkill(dir, 'off', '---\ndescription: hidden\n---\n');
    await writeSkill(dir, 'broken', '---\n');

    const { body, warnings } = await captureSkillCatalog({ dir, disabled: ['off'] });
    expect(body).toBe(`<available_skills>\n- bare (${bare})\n- review: Review a diff (${review})\n</available_skills>`);
    expect(warnings).toHaveLength(1);
    expect(body).not.toContain('broken');
  });

  it('is absent with no config, no directory, or only disabled skills', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'off', 'x');
    expect(await captureSkillCatalog(null)).toEqual({ body: null, warnings: [] });
    expect(await captureSkillCatalog({ dir: path.join(dir, 'missing') })).toEqual({ body: null, warnings: [] });
    expect(await captureSkillCatalog({ dir, disabled: ['off'] })).toEqual({ body: null, warnings: [] });
  });
});
