import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { capturePolicyOnly, captureWorldState } from '../../../src/context/world-state/capture.js';
import { captureUserProjectContext } from '../../../src/context/world-state/user-project.js';
import { renderSandboxPolicy } from '../../../src/context/world-state/sandbox-policy.js';
import { SECTION_ORDER } from '../../../src/context/world-state/types.js';
import { writeSkill } from '../../skills/skill-fixtures.js';
import { useTempDirs } from './temp-dir.js';

const tempDir = useTempDirs();

describe('captureWorldState', () => {
  it('captures all four sections in SECTION_ORDER, with scan warnings', async () => {
    const workspace = await tempDir();
    await writeFile(path.join(workspace, 'AGENTS.md'), 'Be brief.');
    const skillsDir = path.join(workspace, 'skills');
    await writeSkill(skillsDir, 'review', '---\ndescription: d\n---\n');
    await mkdir(path.join(skillsDir, 'no-file'));

    const { capture, warnings } = await captureWorldState({ workspaceDir: workspace, skills: { dir: skillsDir }, permissionMode: 'auto' });
    expect([...capture.keys()]).toEqual(SECTION_ORDER);
    expect(capture.get('runtime/user-project-context')).toBe(await captureUserProjectContext(workspace));
    expect(capture.get('project/AGENTS.md')).toContain('\nBe brief.\n');
    expect(capture.get('skills/catalog')).toMatch(/^<available_skills>\n- review: d \(/);
    expect(capture.get('runtime/sandbox-policy')).toBe(renderSandboxPolicy('auto'));
    expect(warnings).toEqual(['skill no-file: no SKILL.md']);

    const again = await captureWorldState({ workspaceDir: workspace, skills: { dir: skillsDir }, permissionMode: 'auto' });
    expect([...again.capture.entries()]).toEqual([...capture.entries()]);
  });

  it('has absent project sections without a workspace, and no catalog without skills', async () => {
    const { capture, warnings } = await captureWorldState({ workspaceDir: null, skills: null, permissionMode: 'ask' });
    expect([...capture.entries()]).toEqual([
      ['runtime/user-project-context', null],
      ['project/AGENTS.md', null],
      ['skills/catalog', null],
      ['runtime/sandbox-policy', renderSandboxPolicy('ask')],
    ]);
    expect(warnings).toEqual([]);
  });

  it('reports the first failing section in SECTION_ORDER when several fail', async () => {
    const workspace = await tempDir();
    const skillsFile = path.join(workspace, 'skills-file');
    await writeFile(skillsFile, '');
    await mkdir(path.join(workspace, 'AGENTS.md')); // project_instruction_error
    const sources = { workspaceDir: workspace, skills: { dir: skillsFile }, permissionMode: 'ask' as const };

    await expect(captureWorldState(sources)).rejects.toMatchObject({ code: 'project_instruction_error' });

    // Now also break the project context (names too long to render): it comes first.
    await Promise.all(Array.from({ length: 64 }, (_, i) => writeFile(path.join(workspace, String(i).padStart(2, '0') + 'y'.repeat(253)), '')));
    await expect(captureWorldState(sources)).rejects.toMatchObject({ code: 'user_project_context_error' });
    await expect(captureWorldState(sources)).rejects.toMatchObject({ code: 'user_project_context_error' });
  });

  it('fails with skill_catalog_task_error when only the skills directory is broken', async () => {
    const workspace = await tempDir();
    const skillsFile = path.join(workspace, 'skills-file');
    await writeFile(skillsFile, '');
    await expect(captureWorldState({ workspaceDir: workspace, skills: { dir: skillsFile }, permissionMode: 'ask' })).rejects.toMatchObject({
      code: 'skill_catalog_task_error',
    });
  });
});

describe('capturePolicyOnly', () => {
  it('renders the sandbox it is given, and hands back the same capture for the same policy', async () => {
    const sandbox = { command: { kind: 'bwrap' as const }, network: false };
    const capture = capturePolicyOnly('ask', sandbox);
    expect(capture.get('runtime/sandbox-policy')).toBe(renderSandboxPolicy('ask', sandbox));
    expect(capturePolicyOnly('ask', { ...sandbox })).toBe(capture);
    expect(capturePolicyOnly('ask').get('runtime/sandbox-policy')).toBe(renderSandboxPolicy('ask'));
    const { capture: full } = await captureWorldState({ workspaceDir: null, skills: null, permissionMode: 'ask', sandbox: { ...sandbox, network: true } });
    expect(full.get('runtime/sandbox-policy')).toContain("network: allowed — commands share the host's network");
  });
});
