import { lstatSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { WorldStateError } from '../../protocol/errors.js';
import { messageOf } from '../../protocol/error-message.js';
import { SettledReads } from '../../util/settled-reads.js';

const MAX_PROJECT_INSTRUCTIONS_BYTES = 64 * 1024;

/** Each instruction file's body (null: only whitespace), read again only when the file changed. */
const bodies = new SettledReads<string | null>();

/**
 * The `project/AGENTS.md` body, or null when the section is absent (no file, or only whitespace).
 * A file that exists but is unsafe or unreadable fails instead of being silently skipped: the user
 * wrote instructions and a turn must not run as if they were not there. The file's metadata is one
 * `lstat` on the main thread (most workspaces have no such file, and a missing file through the
 * thread pool costs an error object besides); its bytes are read through the pool, and only when it
 * changed (`SettledReads`).
 */
export async function captureProjectInstructions(workspaceDir: string): Promise<string | null> {
  const file = path.resolve(workspaceDir, 'AGENTS.md');
  const fail = (reason: string): never => {
    throw new WorldStateError('project_instruction_error', `${file}: ${reason}`);
  };
  const seenAtMs = Date.now();
  let info;
  try {
    info = lstatSync(file, { bigint: true, throwIfNoEntry: false });
  } catch (error) {
    return fail(messageOf(error));
  }
  if (info === undefined) return null;
  // lstat, not stat: a symlink could point the instructions anywhere on the host.
  if (info.isSymbolicLink()) fail('is a symbolic link');
  if (!info.isFile()) fail('is not a regular file');
  if (info.size > MAX_PROJECT_INSTRUCTIONS_BYTES) fail(`${info.size} bytes exceed ${MAX_PROJECT_INSTRUCTIONS_BYTES}`);
  return bodies.read(file, info, seenAtMs, () => readBody(file, fail));
}

/** The file's text wrapped for the model, null for only whitespace or a file gone since its lstat. */
async function readBody(file: string, fail: (reason: string) => never): Promise<string | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return fail(messageOf(error));
  }
  // Checked again on the bytes read: the file may have grown between lstat and read.
  if (bytes.length > MAX_PROJECT_INSTRUCTIONS_BYTES) fail(`${bytes.length} bytes exceed ${MAX_PROJECT_INSTRUCTIONS_BYTES}`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return fail('is not valid UTF-8');
  }
  if (text.trim() === '') return null;
  return `<project_instructions path="${file}">\n${text}\n</project_instructions>`;
}
