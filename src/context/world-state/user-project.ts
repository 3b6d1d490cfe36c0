import type { Dirent } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { WorldStateError } from '../../protocol/errors.js';
import { messageOf } from '../../protocol/error-message.js';

/** CW-2 source rules: a bounded listing keeps a huge repository from flooding the context. */
const MAX_TOP_LEVEL_ENTRIES = 64;
const MAX_PROJECT_CONTEXT_CHARS = 16_384;

/** The `runtime/user-project-context` body: working directory, repository root, top-level layout. */
export async function captureUserProjectContext(workspaceDir: string): Promise<string> {
  const fail = (reason: string): never => {
    throw new WorldStateError('user_project_context_error', `project context for ${workspaceDir}: ${reason}`);
  };
  let entries: Dirent[];
  let repositoryRoot: string | null;
  try {
    // Checked first: walking up from a missing directory could otherwise list some unrelated repository.
    if (!(await stat(workspaceDir)).isDirectory()) fail('not a directory');
    repositoryRoot = await findRepositoryRoot(workspaceDir);
    entries = await readdir(repositoryRoot ?? workspaceDir, { withFileTypes: true });
  } catch (error) {
    if (error instanceof WorldStateError) throw error;
    return fail(messageOf(error));
  }

  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const lines = [
    '<user_project_context format_version="1">',
    `working_directory: ${workspaceDir}`,
    `repository_root: ${repositoryRoot ?? 'none'}`,
    'top_level_entries:',
    ...entries.slice(0, MAX_TOP_LEVEL_ENTRIES).map((e) => `- ${e.name}${e.isDirectory() ? '/' : ''}`),
  ];
  if (entries.length > MAX_TOP_LEVEL_ENTRIES) lines.push(`… and ${entries.length - MAX_TOP_LEVEL_ENTRIES} more entries`);
  lines.push('</user_project_context>');
  const text = lines.join('\n');
  if (text.length > MAX_PROJECT_CONTEXT_CHARS) fail(`${text.length} characters exceed ${MAX_PROJECT_CONTEXT_CHARS}`);
  return text;
}

/** The nearest directory at or above `start` holding a `.git` (a directory, or a file in worktrees). */
async function findRepositoryRoot(start: string): Promise<string | null> {
  let dir = path.resolve(start);
  for (;;) {
    if (await exists(path.join(dir, '.git'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch {
    return false;
  }
}
