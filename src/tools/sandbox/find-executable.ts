import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** An absolute path to an executable `name` in one of `dirs` (relative ones skipped, as a shell would not be told them), or null. */
export function findExecutable(name: string, dirs: readonly string[]): string | null {
  for (const dir of dirs) {
    if (!path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}
