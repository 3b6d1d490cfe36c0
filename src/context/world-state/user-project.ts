import { lstatSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { WorldStateError } from '../../protocol/errors.js';
import { messageOf } from '../../protocol/error-message.js';
import { SettledReads } from '../../util/settled-reads.js';

/** CW-2 source rules: a bounded listing keeps a huge repository from flooding the context. */
const MAX_TOP_LEVEL_ENTRIES = 64;
const MAX_PROJECT_CONTEXT_CHARS = 16_384;

/** Each listed directory's entry lines, in order, with the count of entries past the first 64. */
const listings = new SettledReads<{ lines: string[]; more: number }>();

/**
 * The `runtime/user-project-context` body: working directory, repository root, top-level layout.
 * The directories' metadata is read with one `stat`/`lstat` each on the main thread, not through the
 * thread pool: a single syscall that reads no content, where the pool costs some 60 µs of CPU per
 * operation on every model call. The listing itself is read through the pool, and only when the
 * listed directory changed (`SettledReads`).
 */
export async function captureUserProjectContext(workspaceDir: string, ownDirectory = false): Promise<string> {
  const fail = (reason: string): never => {
    throw new WorldStateError('user_project_context_error', `project context for ${workspaceDir}: ${reason}`);
  };
  let listing: { lines: string[]; more: number };
  let repositoryRoot: string | null;
  try {
    const seenAtMs = Date.now();
    // Checked first: walking up from a missing directory could otherwise list some unrelated repository.
    const workspace = statSync(workspaceDir, { bigint: true });
    if (!workspace.isDirectory()) fail('not a directory');
    repositoryRoot = findRepositoryRoot(workspaceDir, ownDirectory ? workspaceDir : null);
    const listed = repositoryRoot ?? workspaceDir;
    const info = listed === workspaceDir ? workspace : statSync(listed, { bigint: true });
    listing = await listings.read(listed, info, seenAtMs, () => listEntries(listed));
  } catch (error) {
    if (error instanceof WorldStateError) throw error;
    return fail(messageOf(error));
  }

  const lines = [
    '<user_project_context format_version="1">',
    `working_directory: ${workspaceDir}`,
    `repository_root: ${repositoryRoot ?? 'none'}`,
    'top_level_entries:',
    ...listing.lines,
  ];
  if (listing.more > 0) lines.push(`… and ${listing.more} more entries`);
  lines.push('</user_project_context>');
  const text = lines.join('\n');
  if (text.length > MAX_PROJECT_CONTEXT_CHARS) fail(`${text.length} characters exceed ${MAX_PROJECT_CONTEXT_CHARS}`);
  return text;
}

/** The first 64 entries of `dir` in code-unit order, directories with a slash, and how many more there are. */
async function listEntries(dir: string): Promise<{ lines: string[]; more: number }> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const lines = entries.slice(0, MAX_TOP_LEVEL_ENTRIES).map((e) => `- ${e.name}${e.isDirectory() ? '/' : ''}`);
  return { lines, more: Math.max(0, entries.length - MAX_TOP_LEVEL_ENTRIES) };
}

/** The nearest directory at or above `start` (up to `top`, when given) holding a `.git` (a directory, or a file in worktrees). */
function findRepositoryRoot(start: string, top: string | null): string | null {
  let dir = path.resolve(start);
  for (;;) {
    if (exists(path.join(dir, '.git'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir || (top !== null && dir === path.resolve(top))) return null;
    dir = parent;
  }
}

/** Whether `file` exists (not followed if a link); any error (a directory that cannot be searched) counts as no. */
function exists(file: string): boolean {
  try {
    return lstatSync(file, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}
