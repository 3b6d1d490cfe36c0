import { listSkills } from '../../skills/skill-directory.js';
import type { SkillsConfig } from '../../skills/types.js';

/**
 * The `skills/catalog` body: what the model can discover. Null when there is nothing to offer.
 * Scan warnings are returned for the log, never rendered: they are the operator's, not the model's.
 */
export async function captureSkillCatalog(config: SkillsConfig | null): Promise<{ body: string | null; warnings: string[] }> {
  if (config === null) return { body: null, warnings: [] };
  const { skills, warnings } = await listSkills(config);
  if (skills.length === 0) return { body: null, warnings };
  const lines = skills.map((s) => (s.description === '' ? `- ${s.name} (${s.path})` : `- ${s.name}: ${s.description} (${s.path})`));
  return { body: ['<available_skills>', ...lines, '</available_skills>'].join('\n'), warnings };
}
