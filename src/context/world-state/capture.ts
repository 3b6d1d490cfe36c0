import { captureProjectInstructions } from './project-instructions.js';
import { renderSandboxPolicy } from './sandbox-policy.js';
import { captureSkillCatalog } from './skill-catalog.js';
import { SECTION_ORDER, type WorldStateCapture, type WorldStateSection, type WorldStateSources } from './types.js';
import { captureUserProjectContext } from './user-project.js';

/**
 * Reads all four sources at once. When several fail, the error reported is the first in
 * SECTION_ORDER, so the same broken world always fails a turn with the same code.
 */
export async function captureWorldState(sources: WorldStateSources): Promise<{ capture: WorldStateCapture; warnings: string[] }> {
  const { workspaceDir } = sources;
  if (workspaceDir === null && sources.skills === null) return { capture: capturePolicyOnly(sources.permissionMode, sources.sandbox), warnings: [] };
  const reads: Record<WorldStateSection, Promise<{ body: string | null; warnings: string[] }>> = {
    'runtime/user-project-context': bodyOnly(workspaceDir === null ? null : captureUserProjectContext(workspaceDir, sources.ownDirectory === true)),
    'project/AGENTS.md': bodyOnly(workspaceDir === null ? null : captureProjectInstructions(workspaceDir)),
    'skills/catalog': captureSkillCatalog(sources.skills),
    'runtime/sandbox-policy': bodyOnly(renderSandboxPolicy(sources.permissionMode, sources.sandbox ?? null)),
  };
  const settled = await Promise.allSettled(SECTION_ORDER.map((section) => reads[section]));

  const capture = new Map<WorldStateSection, string | null>();
  const warnings: string[] = [];
  SECTION_ORDER.forEach((section, i) => {
    const result = settled[i] as PromiseSettledResult<{ body: string | null; warnings: string[] }>;
    if (result.status === 'rejected') throw result.reason;
    capture.set(section, result.value.body);
    warnings.push(...result.value.warnings);
  });
  return { capture, warnings };
}

/** By policy text: a few modes times a few sandboxes. */
const policyCaptures = new Map<string, WorldStateCapture>();

/**
 * The capture of a session with no workspace and no skills: only the sandbox policy, which needs no
 * I/O. Synchronous and built once per policy, since it is sampled before every model call.
 */
export function capturePolicyOnly(mode: WorldStateSources['permissionMode'], sandbox: WorldStateSources['sandbox'] = null): WorldStateCapture {
  const policy = renderSandboxPolicy(mode, sandbox ?? null);
  let capture = policyCaptures.get(policy);
  if (!capture) {
    capture = new Map<WorldStateSection, string | null>(SECTION_ORDER.map((section) => [section, section === 'runtime/sandbox-policy' ? policy : null]));
    policyCaptures.set(policy, capture);
  }
  return capture;
}

async function bodyOnly(body: string | null | Promise<string | null>): Promise<{ body: string | null; warnings: string[] }> {
  return { body: await body, warnings: [] };
}
