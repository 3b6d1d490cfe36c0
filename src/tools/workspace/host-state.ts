import { realpathSync } from 'node:fs';
import path from 'node:path';
import { isInside } from './confine.js';

/** Where SQLite keeps a database's transaction state, next to the file itself. */
const SIDE_FILES = ['-wal', '-shm', '-journal'];

/**
 * What `workspaceTools({ hiddenPaths })` hides of the SQLite database at `file` that the host (or
 * the embedded chat, or a worker) itself keeps every user's sessions in: the database's directory
 * when it is a `.turnchart` directory (the default `.turnchart/turnchart.db`, wherever the current
 * directory is) that does not hold the workspace, else the file and its `-wal`, `-shm` and
 * `-journal` siblings, where it is named and where it really is. Given always: the tools only
 * ever meet the part that lies inside the workspace, and the sandbox covers only what it shows.
 */
export function sqliteStatePaths(file: string, workspace: string): string[] {
  if (file === '' || file === ':memory:') return [];
  const db = path.resolve(file);
  const dir = path.dirname(db);
  if (path.basename(dir) === '.turnchart' && !holds(dir, path.resolve(workspace))) return [dir];
  const names = new Set([db]);
  const real = realOrNull(db);
  if (real !== null) names.add(real);
  return [...names].flatMap((name) => [name, ...SIDE_FILES.map((suffix) => `${name}${suffix}`)]);
}

/** Does `dir` hold `workspace`, by name or by real path? */
function holds(dir: string, workspace: string): boolean {
  if (isInside(dir, workspace)) return true;
  const [realDir, realWorkspace] = [realOrNull(dir), realOrNull(workspace)];
  return realDir !== null && realWorkspace !== null && isInside(realDir, realWorkspace);
}

function realOrNull(given: string): string | null {
  try {
    return realpathSync(given);
  } catch {
    return null;
  }
}
