import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { hasOwnDirectory } from '../../protocol/principal.js';

/**
 * A user's own directory beneath a shared workspace (`users/<hash>`), made on first use, mode 0700.
 * A host's sessions and a worker's tasks of a principal that is not an operator work there, so one
 * user's agent neither reads nor changes another's files, and its commands can write only there.
 * Named by a hash of the principal: a listing of `users/` tells nobody who else uses the host.
 */
export async function userDirectory(root: string, principal: string): Promise<string> {
  const dir = path.join(root, 'users', principalDirName(principal));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** Where a principal's new session works: its own directory beneath `root` when it has one (`hasOwnDirectory`), else `root`. */
export async function workspaceFor(root: string, principal: string, admin: boolean): Promise<string> {
  return hasOwnDirectory(principal, admin) ? userDirectory(root, principal) : root;
}

export function principalDirName(principal: string): string {
  return createHash('sha256').update(principal).digest('hex').slice(0, 32);
}
