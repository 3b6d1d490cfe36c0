import { listSkills } from '../../skills/skill-directory.js';
import type { SkillsConfig, SkillSummary } from '../../skills/types.js';

/** CW-2 source rule, like the project context's: the catalog is sent on every model call that changes it. */
export const MAX_SKILL_CATALOG_CHARS = 16_384;

const OPEN = '<available_skills>';
const CLOSE = '</available_skills>';

/**
 * The `skills/catalog` body: what the model can discover. Null when there is nothing to offer.
 * Scan warnings are returned for the log, never rendered: they are the operator's, not the model's.
 * Over the cap, the first skills by name that fit are listed and the rest only counted; they stay
 * selectable by name.
 */
export async function captureSkillCatalog(config: SkillsConfig | null): Promise<{ body: string | null; warnings: string[] }> {
  if (config === null) return { body: null, warnings: [] };
  const { skills, warnings } = await listSkills(config);
  if (skills.length === 0) return { body: null, warnings };
  const { lines, left } = fitLines(skills.map(catalogLine));
  if (left > 0) warnings.push(`skills catalog: ${left} skills left out to stay within ${MAX_SKILL_CATALOG_CHARS} characters`);
  return { body: [OPEN, ...lines, CLOSE].join('\n'), warnings };
}

function catalogLine(skill: SkillSummary): string {
  return skill.description === '' ? `- ${skill.name} (${skill.path})` : `- ${skill.name}: ${skill.description} (${skill.path})`;
}

/** The longest prefix of `lines` that fits the cap together with the note counting the rest. */
function fitLines(lines: string[]): { lines: string[]; left: number } {
  const frame = OPEN.length + 1 + CLOSE.length;
  const total = lines.reduce((sum, line) => sum + line.length + 1, frame);
  if (total <= MAX_SKILL_CATALOG_CHARS) return { lines, left: 0 };
  // Room for the longest note there could be, so adding it never breaks the cap.
  let used = frame + leftOutNote(lines.length).length + 1;
  let kept = 0;
  while (kept < lines.length && used + (lines[kept] as string).length + 1 <= MAX_SKILL_CATALOG_CHARS) {
    used += (lines[kept] as string).length + 1;
    kept += 1;
  }
  const left = lines.length - kept;
  return { lines: [...lines.slice(0, kept), leftOutNote(left)], left };
}

function leftOutNote(left: number): string {
  return `- … and ${left} more skills not listed`;
}
