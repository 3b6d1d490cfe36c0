import { open, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_SKILL_CATALOG_CHARS } from '../../src/context/world-state/skill-catalog.js';
import { MAX_SKILL_FILE_BYTES } from '../../src/skills/limits.js';
import { linkSkillFile, writeSkill } from '../skills/skill-fixtures.js';
import { useFifos } from '../skills/fifo.js';
import { runTurn, type Harness } from '../support/harness.js';
import { useTempDirs, userTexts, workspaceHarness } from '../support/workspace.js';

// Hostile-probe regressions: every skill file obeys AGENTS.md's rules, whatever the skills directory holds.

const tempDir = useTempDirs('turnchart-skills-hardening-');
// Registered after the temp dirs so it runs before they are removed: a reader stuck on a FIFO is let go.
const mkfifo = useFifos();

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.runtime.shutdown()));
});

const SECRET = 'SECRET-MARKER-4f1c9e';

async function skillsHarness(dir: string, steps = [{ text: 'done' }]) {
  const warnings: string[] = [];
  const h = await workspaceHarness(steps, { skills: { dir }, warn: (message) => warnings.push(message) });
  harnesses.push(h);
  return { h, warnings };
}

function selecting(h: Harness, name: string, clientRequestId = `c-${name}`) {
  return h.session.startTurn({ clientRequestId, input: [{ type: 'skill', name }, { type: 'text', text: 'go' }] });
}

const unknown = (name: string) => ({ ok: false, error: { code: 'UnknownSkill', name } });

function catalogOf(h: Harness, call = 0): string | undefined {
  return userTexts(h.model.requests[call]!.messages).find((text) => text.startsWith('<available_skills>'));
}

/** A file outside the skills directory that a link could try to smuggle into the model's context. */
async function secretFile(root: string): Promise<string> {
  const file = path.join(root, 'outside', 'SKILL.md');
  await writeSkill(root, 'outside', `---\ndescription: ${SECRET}\n---\n${SECRET} body`);
  return file;
}

describe('skill files are held to the AGENTS.md rules (hostile probe)', () => {
  it('a SKILL.md linked to a file outside is never read: not in the catalog, not selectable, never sent', async () => {
    const root = await tempDir();
    const dir = path.join(root, 'skills');
    const outside = await secretFile(root);
    const review = await writeSkill(dir, 'review', '---\ndescription: Reviews\n---\nbody');
    await linkSkillFile(dir, 'leak', outside);
    const { h, warnings } = await skillsHarness(dir);

    expect(await selecting(h, 'leak')).toEqual(unknown('leak'));
    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(catalogOf(h)).toBe(`<available_skills>\n- review: Reviews (${review})\n</available_skills>`);
    expect(warnings).toContain('skill leak: SKILL.md is a symbolic link');
    expect(JSON.stringify(h.model.requests)).not.toContain(SECRET);
    expect(JSON.stringify(await h.storage.listMessages(h.session.id))).not.toContain(SECRET);
  });

  it('a skill folder linked outside the skills directory is never read', async () => {
    const root = await tempDir();
    const dir = path.join(root, 'skills');
    await secretFile(root);
    const review = await writeSkill(dir, 'review', '---\ndescription: Reviews\n---\nbody');
    await symlink(path.join(root, 'outside'), path.join(dir, 'leak'));
    const { h, warnings } = await skillsHarness(dir);

    expect(await selecting(h, 'leak')).toEqual(unknown('leak'));
    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(catalogOf(h)).toBe(`<available_skills>\n- review: Reviews (${review})\n</available_skills>`);
    expect(warnings).toContain('skill leak: folder is a symbolic link');
    expect(JSON.stringify(h.model.requests)).not.toContain(SECRET);
  });

  it('links that stay inside are refused too: a skill is a real folder holding a real SKILL.md', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'review', '---\ndescription: Reviews\n---\nbody');
    await symlink(path.join(dir, 'review'), path.join(dir, 'alias'));
    await linkSkillFile(dir, 'twin', 'real.md');
    await writeFile(path.join(dir, 'twin', 'real.md'), '---\ndescription: Twin\n---\nbody');
    const { h, warnings } = await skillsHarness(dir);

    expect(await selecting(h, 'alias')).toEqual(unknown('alias'));
    expect(await selecting(h, 'twin')).toEqual(unknown('twin'));
    await runTurn(h.session, 'go');
    expect(catalogOf(h)).toBe(`<available_skills>\n- review: Reviews (${path.join(dir, 'review', 'SKILL.md')})\n</available_skills>`);
    expect(warnings).toEqual(expect.arrayContaining(['skill alias: folder is a symbolic link', 'skill twin: SKILL.md is a symbolic link']));
  });

  it('FIFOs as SKILL.md are never opened: selections and turns finish, and another runtime in the process still runs', async () => {
    const dir = await tempDir();
    const names = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
    for (const name of names) await mkfifo(path.join(dir, name, 'SKILL.md'));
    const { h, warnings } = await skillsHarness(dir);

    // Six selections at once: each one used to park a libuv thread on open() until a writer came.
    expect(await Promise.all(names.map((name) => selecting(h, name)))).toEqual(names.map(unknown));
    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(h.model.requests[0]!.messages.some((m) => m.role === 'user' && m.text.startsWith('<available_skills>'))).toBe(false);
    for (const name of names) expect(warnings).toContain(`skill ${name}: SKILL.md is not a regular file`);

    const otherDir = await tempDir();
    const fine = await writeSkill(otherDir, 'fine', '---\ndescription: Works\n---\nbody');
    const other = await skillsHarness(otherDir, [{ text: 'other done' }]);
    expect((await runTurn(other.h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'other done' });
    expect(catalogOf(other.h)).toBe(`<available_skills>\n- fine: Works (${fine})\n</available_skills>`);
  });

  it('a 300 MB SKILL.md is refused by its size, not read', async () => {
    const dir = await tempDir();
    const file = await writeSkill(dir, 'huge', '');
    // Sparse: no disk used, and nothing to read unless the runtime reads it.
    const handle = await open(file, 'r+');
    await handle.truncate(300 * 1024 * 1024);
    await handle.close();
    const { h, warnings } = await skillsHarness(dir);

    expect(await selecting(h, 'huge')).toEqual(unknown('huge'));
    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(warnings).toContain(`skill huge: SKILL.md has ${300 * 1024 * 1024} bytes, over the limit of ${MAX_SKILL_FILE_BYTES}`);
  });

  it('a 2 MB description no longer fails every turn with compaction_error', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'wordy', `---\ndescription: ${'d'.repeat(2 * 1024 * 1024)}\n---\nbody`);
    const review = await writeSkill(dir, 'review', '---\ndescription: Reviews\n---\nbody');
    const { h, warnings } = await skillsHarness(dir, [{ text: 'one' }, { text: 'two' }]);

    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'one' });
    expect((await runTurn(h.session, 'again')).outcome).toEqual({ status: 'completed', finalText: 'two' });
    expect(catalogOf(h)).toBe(`<available_skills>\n- review: Reviews (${review})\n</available_skills>`);
    expect(warnings.some((w) => w.startsWith('skill wordy: SKILL.md has '))).toBe(true);
    expect(await selecting(h, 'wordy')).toEqual(unknown('wordy'));
  });

  it('a description over 1 024 characters keeps its skill out of the catalog and out of reach', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'long', `---\ndescription: ${'d'.repeat(1_025)}\n---\nbody`);
    const edge = await writeSkill(dir, 'edge', `---\ndescription: ${'e'.repeat(1_024)}\n---\nbody`);
    const { h, warnings } = await skillsHarness(dir);

    expect(await selecting(h, 'long')).toEqual(unknown('long'));
    await runTurn(h.session, 'go');
    expect(catalogOf(h)).toBe(`<available_skills>\n- edge: ${'e'.repeat(1_024)} (${edge})\n</available_skills>`);
    expect(warnings).toContain('skill long: description has 1025 characters, over the limit of 1024');
  });

  it('a SKILL.md that is not UTF-8 is refused in the catalog and as a selection', async () => {
    const dir = await tempDir();
    await writeSkill(dir, 'latin1', Buffer.concat([Buffer.from('---\ndescription: caf'), Buffer.from([0xe9]), Buffer.from('\n---\nbody')]));
    const { h, warnings } = await skillsHarness(dir);

    expect(await selecting(h, 'latin1')).toEqual(unknown('latin1'));
    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(catalogOf(h)).toBeUndefined();
    expect(warnings).toContain('skill latin1: SKILL.md is not valid UTF-8');
  });

  it('the catalog is capped: as many skills as fit, then a count of the rest', async () => {
    const dir = await tempDir();
    const names = Array.from({ length: 40 }, (_, i) => `skill-${String(i).padStart(2, '0')}`);
    for (const name of names) await writeSkill(dir, name, `---\ndescription: ${name} ${'x'.repeat(1_000)}\n---\nbody`);
    const { h, warnings } = await skillsHarness(dir, [{ text: 'one' }, { text: 'two' }]);

    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'one' });
    const catalog = catalogOf(h)!;
    expect(catalog.length).toBeLessThanOrEqual(MAX_SKILL_CATALOG_CHARS);
    const listed = catalog.split('\n').filter((line) => line.startsWith('- skill-'));
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.map((line) => line.slice(2, 10))).toEqual(names.slice(0, listed.length));
    const left = names.length - listed.length;
    expect(catalog.endsWith(`\n- … and ${left} more skills not listed\n</available_skills>`)).toBe(true);
    expect(warnings).toContain(`skills catalog: ${left} skills left out to stay within ${MAX_SKILL_CATALOG_CHARS} characters`);
    // A skill left out of the catalog is still selectable by name.
    const started = await selecting(h, names.at(-1)!);
    if (!started.ok) throw new Error(`refused: ${JSON.stringify(started.error)}`);
    expect(await h.session.waitForTurn(started.turnId)).toEqual({ status: 'completed', finalText: 'two' });
  });
});
