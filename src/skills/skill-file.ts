import { lstatSync } from 'node:fs';
import path from 'node:path';
import { readRegularFile } from './bounded-read.js';
import { parseSkillFile, type ParsedSkillFile } from './frontmatter.js';
import { MAX_SKILL_DESCRIPTION_CHARS, MAX_SKILL_FILE_BYTES, SKILL_READ_TIMEOUT_MS } from './limits.js';
import { withDeadline } from '../util/deadline.js';
import { messageOf } from '../protocol/error-message.js';
import { SettledReads } from '../util/settled-reads.js';

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

/** Each SKILL.md as it was read and parsed, read again only when the file changed; failed reads are not kept. */
const skillFiles = new SettledReads<SkillFileLoad>();

/**
 * The folder's and the file's metadata are one `lstat` each on the main thread: the catalog is
 * sampled before every model call, and the thread pool costs some 60 µs of CPU per operation, five
 * of them for a file's lstat, open, fstat, read and close (`SettledReads`).
 */
async function load(folder: string): Promise<SkillFileLoad> {
  try {
    const folderProblem = checkFolder(folder);
    if (folderProblem !== null) return { warning: folderProblem };
    const file = path.join(folder, 'SKILL.md');
    const seenAtMs = Date.now();
    const info = lstatSync(file, { bigint: true, throwIfNoEntry: false });
    if (info === undefined) return { warning: 'no SKILL.md' };
    return await skillFiles.read(file, info, seenAtMs, () => readSkill(file), (read) => 'file' in read);
  } catch (error) {
    return { warning: messageOf(error) };
  }
}

/** Reads SKILL.md as a regular file, checked again as it is opened (`readRegularFile`), and parses it. */
async function readSkill(file: string): Promise<SkillFileLoad> {
  try {
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

function checkFolder(folder: string): string | null {
  const info = lstatSync(folder, { throwIfNoEntry: false });
  if (info === undefined) return 'no such folder';
  if (info.isSymbolicLink()) return 'folder is a symbolic link';
  return info.isDirectory() ? null : 'is not a folder';
}

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}
