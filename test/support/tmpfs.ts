import { execFile } from 'node:child_process';
import { mkdtemp, open, rm, rmdir, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A small `tmpfs` a test mounts for itself, to run out of space on purpose without touching any
 * other disk. Mounting needs root (or CAP_SYS_ADMIN); `tmpfsUnavailable()` says why it cannot be done.
 */
export interface Tmpfs {
  dir: string;
  unmount(): Promise<void>;
}

const run = promisify(execFile);

export async function mountTmpfs(sizeKb: number): Promise<Tmpfs> {
  const dir = await mkdtemp(join(tmpdir(), 'turnchart-tmpfs-'));
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', dir]);
  } catch (error) {
    await rmdir(dir);
    throw error;
  }
  return {
    dir,
    unmount: async () => {
      await run('umount', [dir]).catch(() => run('umount', ['-l', dir]));
      await rmdir(dir);
    },
  };
}

/** Why no tmpfs can be mounted here (tried with a tiny one), or null. */
export async function tmpfsUnavailable(): Promise<string | null> {
  try {
    await (await mountTmpfs(64)).unmount();
    return null;
  } catch (error) {
    const e = error as { stderr?: string; message?: string };
    return `cannot mount a tmpfs here (${(e.stderr || e.message || String(error)).trim()})`;
  }
}

/** Bytes still free on the file system holding `dir`. */
export async function freeBytes(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

/**
 * Writes a filler file in `dir` until the file system refuses any more (ENOSPC), in ever smaller
 * pieces down to a byte, so not one byte is left. `free()` deletes it.
 */
export async function fillDisk(dir: string): Promise<{ free(): Promise<void> }> {
  const path = join(dir, 'filler');
  const file = await open(path, 'a');
  try {
    for (let size = 1 << 20; size >= 1; size >>= 1) {
      const chunk = Buffer.alloc(size);
      while (await file.write(chunk).then(() => true, (e: NodeJS.ErrnoException) => (e.code === 'ENOSPC' ? false : Promise.reject(e))));
    }
  } finally {
    await file.close();
  }
  return { free: () => rm(path) };
}
