import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { isInside, type Confined } from './confine.js';

/** A file found by the walk: where it really is, and the path the model sees (relative to the root). */
export interface WalkedFile {
  real: string;
  display: string;
}

/** Never searched: version-control internals and installed packages are not the project's text. */
const SKIPPED_DIRS: ReadonlySet<string> = new Set(['.git', 'node_modules']);

type Place = WalkedFile;

/**
 * Regular files under `start` (or `start` itself when it is a file), in name order, depth first.
 * A symlink is followed only when its real target is inside the root; each real directory is
 * walked once, so a link back up the tree cannot loop. Unreadable directories are passed over.
 */
export async function* walkFiles(start: Confined): AsyncGenerator<WalkedFile> {
  const place = { real: start.real, display: start.relative === '.' ? '' : start.relative };
  const info = await stat(start.real);
  if (info.isFile()) yield place;
  else if (info.isDirectory()) yield* walkDir(start.root, place, new Set());
}

async function* walkDir(root: string, dir: Place, visited: Set<string>): AsyncGenerator<WalkedFile> {
  if (visited.has(dir.real)) return;
  visited.add(dir.real);
  const entries = await readdir(dir.real, { withFileTypes: true }).catch(() => [] as Dirent[]);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const place = { real: path.join(dir.real, entry.name), display: path.posix.join(dir.display, entry.name) };
    const kind = entry.isSymbolicLink() ? await followInside(root, place) : kindOf(entry);
    if (kind === 'dir' && !SKIPPED_DIRS.has(entry.name)) yield* walkDir(root, place, visited);
    else if (kind === 'file') yield place;
  }
}

type Kind = 'dir' | 'file' | 'other';

/** For a `Dirent` or a `Stats`. */
function kindOf(entry: { isDirectory(): boolean; isFile(): boolean }): Kind {
  return entry.isDirectory() ? 'dir' : entry.isFile() ? 'file' : 'other';
}

/** Points `place.real` at the link's real target when that is inside the root; 'other' (skipped) when not. */
async function followInside(root: string, place: Place): Promise<Kind> {
  try {
    const real = await realpath(place.real);
    if (!isInside(root, real)) return 'other';
    place.real = real;
    return kindOf(await stat(real));
  } catch {
    return 'other';
  }
}
