import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { isAdmin, type Caller } from '../protocol/principal.js';

/** Where each user's own directory lies, beneath the host's workspace. */
const USERS_DIR = 'users';

/**
 * The directory a caller's new sessions work in. An admin (the operator of a host with a shared
 * token, or with none) works in the whole workspace; any other principal in a directory of its own
 * beneath it, made on first use, so one user's agent neither reads nor changes another's files, and
 * its commands can write only there. Named by a hash of the principal: a listing of `users/` tells
 * nobody who else uses the host.
 */
export async function workspaceFor(root: string, caller: Caller): Promise<string> {
  if (isAdmin(caller)) return root;
  const dir = path.join(root, USERS_DIR, principalDirName(caller.principal));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}

export function principalDirName(principal: string): string {
  return createHash('sha256').update(principal).digest('hex').slice(0, 32);
}
