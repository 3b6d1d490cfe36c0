import type { Dirent } from 'node:fs';
import { readdir, realpath, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { MAX_PATH_DEPTH, openDirBeneath, openFileBeneath, type HeldDir } from './beneath.js';
import { hiddenPlaces, isHidden, isInside, type Confined } from './confine.js';

/** A file found by the walk: the path the model sees (relative to the root), and how to open it. */
export interface WalkedFile {
  display: string;
  /** Opens the file (with O_NOFOLLOW added) from the directory the walk holds, never by a path. */
  open(flags: number): Promise<FileHandle>;
}

/** Never searched: version-control internals and installed packages are not the project's text. */
const SKIPPED_DIRS: ReadonlySet<string> = new Set(['.git', 'node_modules']);


interface Walk {
  root: string;
  /** Where the hidden paths are (`hiddenPlaces`), found once per walk: passed over, and never followed into. */
  hidden: readonly string[];
  /** Directories walked, by device and inode: a link back up the tree cannot loop. */
  visited: Set<string>;
}

/**
 * Regular files under `start` (or `start` itself when it is a file), in name order, depth first.
 * Each directory is held open while its entries are read and opened, and each subdirectory is
 * opened from it without following links (`beneath.ts`), so a directory swapped for a link while
 * the walk runs cannot lead it outside. A symbolic link in the tree is followed only when its real
 * target is inside the root, and then walked from the root by that target's path. Unreadable
 * directories are passed over, and so are `hidden` paths (the workspace's `hidden`) and links into them.
 */
export async function* walkFiles(start: Confined, hidden: readonly string[] = []): AsyncGenerator<WalkedFile> {
  const info = await stat(start.real);
  const walk: Walk = { root: start.root, hidden: hidden.length > 0 ? await hiddenPlaces(hidden) : [], visited: new Set() };
  if (info.isFile()) yield { display: start.relative, open: (flags) => openFileBeneath(start.root, start.relative, flags) };
  else if (info.isDirectory()) yield* walkFrom(walk, start.relative, start.relative === '.' ? '' : start.relative, 0);
}

/** Walks the directory at `relative` (real, from the root), opened from the root. */
async function* walkFrom(walk: Walk, relative: string, display: string, depth: number): AsyncGenerator<WalkedFile> {
  const dir = await openDirBeneath(walk.root, relative).catch(() => null);
  if (dir) yield* walkDir(walk, dir, relative, display, depth);
}

/** Walks a held directory, and closes it. */
async function* walkDir(walk: Walk, dir: HeldDir, relative: string, display: string, depth: number): AsyncGenerator<WalkedFile> {
  try {
    const info = await dir.stat();
    const key = `${info.dev}:${info.ino}`;
    // Deeper directories are passed over: the walk holds one descriptor per level.
    if (walk.visited.has(key) || depth > MAX_PATH_DEPTH) return;
    walk.visited.add(key);
    const entries = await readdir(dir.self(), { withFileTypes: true }).catch(() => [] as Dirent[]);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const shown = path.posix.join(display, entry.name);
      const below = path.join(relative, entry.name);
      // `relative` is a real path from the root (the walk follows no link by name), so this is where the entry really is.
      if (isHidden(walk.hidden, path.join(walk.root, below))) continue;
      if (entry.isSymbolicLink()) {
        const target = await linkTargetInside(walk.root, walk.hidden, dir.entry(entry.name));
        if (target?.kind === 'dir' && !SKIPPED_DIRS.has(entry.name)) yield* walkFrom(walk, target.relative, shown, depth + 1);
        else if (target?.kind === 'file') yield { display: shown, open: (flags) => openFileBeneath(walk.root, target.relative, flags) };
      } else if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name)) {
        const child = await dir.openDir(entry.name, below).catch(() => null);
        if (child) yield* walkDir(walk, child, below, shown, depth + 1);
      } else if (entry.isFile()) {
        yield { display: shown, open: (flags) => dir.openFile(entry.name, flags, below) };
      }
    }
  } finally {
    await dir.close();
  }
}

/** A link's real target, relative to the root, when it is inside the root and not hidden; null (skipped) when not. */
async function linkTargetInside(root: string, hidden: readonly string[], link: string): Promise<{ kind: 'dir' | 'file'; relative: string } | null> {
  try {
    const real = await realpath(link);
    if (!isInside(root, real) || isHidden(hidden, real)) return null;
    const info = await stat(real);
    const relative = path.relative(root, real) || '.';
    return info.isDirectory() ? { kind: 'dir', relative } : info.isFile() ? { kind: 'file', relative } : null;
  } catch {
    return null;
  }
}
