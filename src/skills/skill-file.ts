import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { readRegularFile } from './bounded-read.js';
import { parseSkillFile, type ParsedSkillFile } from './frontmatter.js';
import { MAX_SKILL_DESCRIPTION_CHARS, MAX_SKILL_FILE_BYTES, SKILL_READ_TIMEOUT_MS } from './limits.js';
import { withDeadline } from '../util/deadline.js';
import { messageOf } from '../protocol/error-message.js';

export type SkillFileLoad = { file: string; parsed: ParsedSkillFile } | { warning: string };

/**
 * Reads and validates `<dir>/<name>/SKILL.md`. The folder must be a real directory and SKILL.md a
 * regular file: links are refused even when they point inside, so no skill can reach beyond its
 * folder and no check depends on where a link resolves to at one moment. Never throws.
 */
export function loadSkillFile(dir: string, name: string): Promise<SkillFileLoad> {
  const late = (): SkillFileLoad => ({ warning: `SKILL.md was not read within ${SKILL_READ_TIMEOUT_MS} ms` });
  return withDeadline(load(path.resolve(dir, name)), SKILL_READ_TIMEOUT_MS, late);
}

async function load(folder: string): Promise<SkillFileLoad> {
  try {
    const folderProblem = await checkFolder(folder);
    if (folderProblem !== null) return { warning: folderProblem };
    const file = path.join(folder, 'SKILL.md');
    const read = await readRegularFile(file, MAX_SKILL_FILE_BYTES);
    if (read.status === 'missing') return { warning: 'no SKILL.md' };
    if (read.status === 'refused') return { warning: `SKILL.md ${read.reason}` };
    const text = decodeUtf8(read.bytes);
    if (text === null) return { warning: 'SKILL.md is not valid UTF-8' };
    const parsed = parseSkillFile(text);
    const length = parsed.description.length;
    if (length > MAX_SKILL_DESCRIPTION_CHARS) return { warning: `description has ${length} characters, over the limit of ${MAX_SKILL_DESCRIPTION_CHARS}` };
    return { file, parsed };
  } catch (error) {
    return { warning: messageOf(error) };
  }
}

async function checkFolder(folder: string): Promise<string | null> {
  try {
    const info = await lstat(folder);
    if (info.isSymbolicLink()) return 'folder is a symbolic link';
    return info.isDirectory() ? null : 'is not a folder';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'no such folder';
    throw error;
  }
}

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}
