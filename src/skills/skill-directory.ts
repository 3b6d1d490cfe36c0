import { statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { loadSkillFile } from './skill-file.js';
import { type SkillResolution, type SkillSnapshot, type SkillsConfig, type SkillSummary } from './types.js';
import { SKILL_TOKEN_LIMIT } from '../protocol/item-limits.js';
import { WorldStateError } from '../protocol/errors.js';
import { messageOf } from '../protocol/error-message.js';
import { estimateTokens } from '../protocol/token-estimate.js';
import { SettledReads } from '../util/settled-reads.js';

/** Each skills directory's folder names (links among them), read again only when the directory changed. */
const folderNames = new SettledReads<string[]>();

/** Every enabled skill, by name. A broken skill folder is a warning for the log, never a failed turn. */
export async function listSkills(config: SkillsConfig): Promise<{ skills: SkillSummary[]; warnings: string[] }> {
  let names: string[];
  try {
    const seenAtMs = Date.now();
    // One stat on the main thread: the catalog is sampled before every model call (`SettledReads`).
    const info = statSync(config.dir, { bigint: true, throwIfNoEntry: false });
    if (info === undefined) return { skills: [], warnings: [] };
    names = await folderNames.read(path.resolve(config.dir), info, seenAtMs, async () => {
      const entries = await readdir(config.dir, { withFileTypes: true });
      // Links are kept so they are reported: a linked skill folder is refused, never silently lost.
      return entries.filter((e) => e.isDirectory() || e.isSymbolicLink()).map((e) => e.name);
    });
  } catch (error) {
    // No skills directory simply means no skills; one that exists but cannot be listed is a fault.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { skills: [], warnings: [] };
    const reason = messageOf(error);
    throw new WorldStateError('skill_catalog_task_error', `skills directory ${config.dir}: ${reason}`);
  }

  const disabled = new Set(config.disabled ?? []);
  const skills: SkillSummary[] = [];
  const warnings: string[] = [];
  for (const name of names.filter((n) => !disabled.has(n)).sort(byCodeUnits)) {
    const read = await loadSkillFile(config.dir, name);
    if ('warning' in read) warnings.push(`skill ${name}: ${read.warning}`);
    else skills.push({ name, description: read.parsed.description, path: read.file });
  }
  return { skills, warnings };
}

/** Resolves a selected skill and snapshots its body now, so later edits on disk do not change the turn. */
export async function resolveSkill(config: SkillsConfig | null, name: string): Promise<SkillResolution> {
  const unknown: SkillResolution = { ok: false, error: { code: 'UnknownSkill', name } };
  // A name is one folder name, never a path: `../x` must not reach outside the skills directory.
  if (config === null || !isFolderName(name) || (config.disabled ?? []).includes(name)) return unknown;
  // The catalog's rules apply here too: a skill the catalog would refuse cannot be selected either.
  const read = await loadSkillFile(config.dir, name);
  if ('warning' in read) return unknown;
  const tokens = estimateTokens(read.parsed.body);
  if (tokens >= SKILL_TOKEN_LIMIT) return { ok: false, error: { code: 'SkillTooLarge', name, tokens } };
  return { ok: true, skill: { name, path: read.file, body: read.parsed.body } };
}

/** The text of the `skill_instruction` message that carries a snapshot into the conversation. */
export function skillInstructionText(snapshot: SkillSnapshot): string {
  return `<skill name="${snapshot.name}" path="${snapshot.path}">\n${snapshot.body}\n</skill>`;
}

function isFolderName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name);
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
