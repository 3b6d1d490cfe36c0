import { constants, existsSync } from 'node:fs';
import { lstat, mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { EscapeError } from './confine.js';

/**
 * Opening files beneath the workspace root without a window between the check and the open.
 *
 * `confine()` resolves a path and checks it, but a tool that then opens the resolved path by name
 * opens whatever the name leads to by then: a concurrent writer that swaps a directory on the way
 * for a symbolic link to the outside (`renameat2(RENAME_EXCHANGE)` in a loop) made `read_file`
 * return outside files and `write_file` create them. So the tools walk the checked path from an
 * open handle on the root, one component at a time, each opened relative to the directory handle
 * before it and refusing a symbolic link (O_NOFOLLOW): what is opened is always a directory entry
 * that sits inside the root at the moment it is opened.
 *
 * Node has no `openat`; on Linux `/proc/self/fd/N/name` is the same thing, because the kernel
 * resolves `/proc/self/fd/N` to the very directory the descriptor holds, wherever it has moved.
 * Elsewhere (no /proc) the walk falls back to names under the root's real path, checked as before.
 */

const VIA_PROC = process.platform === 'linux' && existsSync('/proc/self/fd');

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Directories a path may descend: each is one open on every call, and a model asking for
 * `d/d/d/…` two thousand deep made one write take seconds and a tree `fs.rm` cannot remove.
 */
export const MAX_PATH_DEPTH = 128;

/** A directory inside the workspace, held open: names inside it are resolved from it, not from a path. */
export class HeldDir {
  constructor(
    private readonly handle: FileHandle,
    /** The path it had when opened: for the fallback without /proc, and nothing else. */
    private readonly realPath: string,
  ) {}

  /** A path naming `name` inside this very directory. */
  entry(name: string): string {
    return VIA_PROC ? `/proc/self/fd/${this.handle.fd}/${name}` : path.join(this.realPath, name);
  }

  /** The directory itself, as a path (for `readdir`). */
  self(): string {
    return VIA_PROC ? `/proc/self/fd/${this.handle.fd}` : this.realPath;
  }

  /** The subdirectory `name`, refused when it is (now) a symbolic link. */
  async openDir(name: string, display: string): Promise<HeldDir> {
    const handle = await openRefusingLinks(this, name, DIR_FLAGS, display);
    return new HeldDir(handle, path.join(this.realPath, name));
  }

  /** The file `name`, opened with `flags` plus O_NOFOLLOW. */
  openFile(name: string, flags: number, display: string): Promise<FileHandle> {
    return openRefusingLinks(this, name, flags | constants.O_NOFOLLOW, display);
  }

  stat() {
    return this.handle.stat();
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** The root's real path, held open. */
async function openRoot(realRoot: string): Promise<HeldDir> {
  return new HeldDir(await open(realRoot, DIR_FLAGS), realRoot);
}

/**
 * The directory at `relative` (a path `confine()` resolved: relative to the real root, no `..`,
 * no symbolic links when it was checked), walked from the root. With `create`, missing
 * directories are made on the way, each inside the one held before it.
 */
export async function openDirBeneath(realRoot: string, relative: string, options: { create?: boolean } = {}): Promise<HeldDir> {
  const parts = components(relative);
  if (parts.length > MAX_PATH_DEPTH) throw new EscapeError(`'${relative.slice(0, 200)}…' is more than ${MAX_PATH_DEPTH} directories deep`);
  let dir = await openRoot(realRoot);
  try {
    const walked: string[] = [];
    for (const part of parts) {
      walked.push(part);
      const display = walked.join('/');
      if (options.create) await mkdir(dir.entry(part)).catch((error: unknown) => ignoreCode(error, 'EEXIST'));
      const next = await dir.openDir(part, display);
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (error) {
    await dir.close();
    throw error;
  }
}

/** The file at `relative` (as `confine()` resolved it), opened with `flags` through its held parent. */
export async function openFileBeneath(realRoot: string, relative: string, flags: number): Promise<FileHandle> {
  const parent = await openDirBeneath(realRoot, path.dirname(relative));
  try {
    return await parent.openFile(path.basename(relative), flags, relative);
  } finally {
    await parent.close();
  }
}

export interface WriteOutcome {
  /** Set when the write was refused; the file is then unchanged. */
  refused?: string;
}

/**
 * Replaces (or creates) the regular file at `relative` with `text`: written to a new file in the
 * held parent directory, then renamed over the name there. The rename replaces the directory entry
 * itself, so a name that became a symbolic link or a hard link since it was checked cannot carry
 * the write anywhere else. A file with more than one link is refused outright: rewriting it in
 * place would change the other names too, which may be outside the workspace, and replacing it
 * would silently part it from them. The mode (and, where allowed, the owner) of a replaced file is kept.
 */
export async function writeFileBeneath(realRoot: string, relative: string, text: string, options: { createParents: boolean }): Promise<WriteOutcome> {
  const parent = await openDirBeneath(realRoot, path.dirname(relative), { create: options.createParents });
  const name = path.basename(relative);
  try {
    const existing = await lstat(parent.entry(name)).catch((error: unknown) => ignoreCode(error, 'ENOENT'));
    if (existing) {
      if (existing.isSymbolicLink()) throw new EscapeError(`'${relative}' became a symbolic link while the tool ran`);
      if (existing.isDirectory()) throw Object.assign(new Error(`is a directory: ${relative}`), { code: 'EISDIR' });
      if (!existing.isFile()) throw Object.assign(new Error(`not a regular file: ${relative}`), { code: 'ENXIO' });
      if (existing.nlink > 1) {
        return { refused: `'${relative}' has ${existing.nlink} hard links; writing it would change the file under its other names too (which may be outside the workspace), so it is left unchanged` };
      }
    }
    const temporary = `.turnchart-${randomBytes(8).toString('hex')}.tmp`;
    const file = await parent.openFile(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, relative);
    try {
      try {
        if (existing) {
          await file.chmod(existing.mode & 0o7777);
          // Only root may give a file away; anyone else writes as the owner already, or not at all.
          await file.chown(existing.uid, existing.gid).catch(() => undefined);
        }
        await file.writeFile(text, 'utf8');
      } finally {
        await file.close();
      }
      await rename(parent.entry(temporary), parent.entry(name));
    } catch (error) {
      await unlink(parent.entry(temporary)).catch(() => undefined);
      throw error;
    }
    return {};
  } finally {
    await parent.close();
  }
}

async function openRefusingLinks(dir: HeldDir, name: string, flags: number, display: string): Promise<FileHandle> {
  try {
    return await open(dir.entry(name), flags);
  } catch (error) {
    // O_NOFOLLOW answers ELOOP for a link (ENOTDIR with O_DIRECTORY): tell a swapped-in link from a plain file.
    const code = (error as NodeJS.ErrnoException).code;
    if ((code === 'ELOOP' || code === 'ENOTDIR') && (await lstat(dir.entry(name)).catch(() => null))?.isSymbolicLink()) {
      throw new EscapeError(`'${display}' has a part that became a symbolic link while the tool ran`);
    }
    throw error;
  }
}

function components(relative: string): string[] {
  return relative.split(path.sep).filter((part) => part !== '' && part !== '.');
}

function ignoreCode(error: unknown, code: string): undefined {
  if ((error as NodeJS.ErrnoException | null)?.code === code) return undefined;
  throw error;
}
