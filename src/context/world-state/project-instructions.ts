import { lstat, readFile } from 'node:fs/promises';
import path from 'node:path';
import { WorldStateError } from '../../protocol/errors.js';
import { messageOf } from '../../protocol/error-message.js';

const MAX_PROJECT_INSTRUCTIONS_BYTES = 64 * 1024;

/**
 * The `project/AGENTS.md` body, or null when the section is absent (no file, or only whitespace).
 * A file that exists but is unsafe or unreadable fails instead of being silently skipped: the user
 * wrote instructions and a turn must not run as if they were not there.
 */
export async function captureProjectInstructions(workspaceDir: string): Promise<string | null> {
  const file = path.resolve(workspaceDir, 'AGENTS.md');
  const fail = (reason: string): never => {
    throw new WorldStateError('project_instruction_error', `${file}: ${reason}`);
  };
  let bytes: Buffer;
  try {
    const info = await lstat(file);
    // lstat, not stat: a symlink could point the instructions anywhere on the host.
    if (info.isSymbolicLink()) fail('is a symbolic link');
    if (!info.isFile()) fail('is not a regular file');
    if (info.size > MAX_PROJECT_INSTRUCTIONS_BYTES) fail(`${info.size} bytes exceed ${MAX_PROJECT_INSTRUCTIONS_BYTES}`);
    bytes = await readFile(file);
  } catch (error) {
    if (error instanceof WorldStateError) throw error;
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
