import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { captureSkillCatalog, MAX_SKILL_CATALOG_CHARS } from '../../src/context/world-state/skill-catalog.js';
import { MAX_SKILL_DESCRIPTION_CHARS } from '../../src/skills/limits.js';
import { useTempDirs } from '../context/world-state/temp-dir.js';
import { writeSkill } from './skill-fixtures.js';

const tempDir = useTempDirs();
const FRAME = '<available_skills>\n</available_skills>'.length;

/**
 * Skills `s000`, `s001`, … whose catalog comes to exactly `chars` characters: as few skills as
 * the description limit allows, the description characters spread evenly over them.
 */
async function catalogOfLength(dir: string, chars: number): Promise<string[]> {
  const fixed = `- s000:  (${path.join(dir, 's000', 'SKILL.md')})\n`.length;
  const count = Math.ceil((chars - FRAME) / (fixed + MAX_SKILL_DESCRIPTION_CHARS));
  const spare = chars - FRAME - count * fixed;
  const names = Array.from({ length: count }, (_, i) => `s${String(i).padStart(3, '0')}`);
  for (const [i, name] of names.entries()) {
    const length = Math.floor(spare / count) + (i < spare % count ? 1 : 0);
    await writeSkill(dir, name, `---\ndescription: ${'d'.repeat(length)}\n---\nbody`);
  }
  return names;
}

const listedNames = (body: string) => body.split('\n').flatMap((line) => (/^- (s\d{3}):/.exec(line)?.slice(1) ?? []));

describe('the skills/catalog cap', () => {
  it(`lists every skill when the catalog is exactly ${MAX_SKILL_CATALOG_CHARS} characters`, async () => {
    const dir = await tempDir();
    const names = await catalogOfLength(dir, MAX_SKILL_CATALOG_CHARS);
    const { body, warnings } = await captureSkillCatalog({ dir });
    expect(body!.length).toBe(MAX_SKILL_CATALOG_CHARS);
    expect(listedNames(body!)).toEqual(names);
    expect(warnings).toEqual([]);
  });

  it('one character more: lists the first skills that fit, counts the rest, and warns', async () => {
    const dir = await tempDir();
    const names = await catalogOfLength(dir, MAX_SKILL_CATALOG_CHARS + 1);
    const { body, warnings } = await captureSkillCatalog({ dir });
    expect(body!.length).toBeLessThanOrEqual(MAX_SKILL_CATALOG_CHARS);
    const listed = listedNames(body!);
    expect(listed).toEqual(names.slice(0, listed.length));
    const left = names.length - listed.length;
    expect(left).toBeGreaterThan(0);
    expect(body!.endsWith(`\n- … and ${left} more skills not listed\n</available_skills>`)).toBe(true);
    expect(warnings).toEqual([`skills catalog: ${left} skills left out to stay within ${MAX_SKILL_CATALOG_CHARS} characters`]);
  });

  it('stays within the cap however many skills there are', async () => {
    const dir = await tempDir();
    for (let i = 0; i < 120; i += 1) await writeSkill(dir, `s${String(i).padStart(3, '0')}`, `---\ndescription: ${'d'.repeat(i * 8)}\n---\n`);
    const { body } = await captureSkillCatalog({ dir });
    expect(body!.length).toBeLessThanOrEqual(MAX_SKILL_CATALOG_CHARS);
    expect(body).toMatch(/\n- … and \d+ more skills not listed\n<\/available_skills>$/);
  });
});
