import { constants, type Stats } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import { isMissing } from '../util/errors.js';

export type BoundedRead = { status: 'read'; bytes: Buffer } | { status: 'missing' } | { status: 'refused'; reason: string };

// O_NONBLOCK: a FIFO swapped in after the lstat opens at once instead of parking a libuv thread
// until a writer comes. O_NOFOLLOW: a link swapped in after the lstat fails the open (ELOOP).
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/**
 * The bytes of `file` when it is a regular file (not a link) of at most `limit` bytes. Its type and
 * size are known before it is opened, so a FIFO, a device or a huge file costs one lstat.
 */
export async function readRegularFile(file: string, limit: number): Promise<BoundedRead> {
  let before: Stats;
  try {
    before = await lstat(file);
  } catch (error) {
    if (isMissing(error)) return { status: 'missing' };
    throw error;
  }
  const refusal = refuse(before, limit);
  if (refusal !== null) return { status: 'refused', reason: refusal };

  let handle: FileHandle;
  try {
    handle = await open(file, OPEN_FLAGS);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') return { status: 'refused', reason: 'is a symbolic link' };
    if (isMissing(error)) return { status: 'missing' };
    throw error;
  }
  try {
    return await readOpened(handle, before, limit);
  } finally {
    await handle.close();
  }
}

/** Checks the opened file is the one lstat saw (the path may have been swapped), then reads it. */
async function readOpened(handle: FileHandle, before: Stats, limit: number): Promise<BoundedRead> {
  const opened = await handle.stat();
  if (opened.dev !== before.dev || opened.ino !== before.ino) return { status: 'refused', reason: 'was replaced while being opened' };
  const refusal = refuse(opened, limit);
  if (refusal !== null) return { status: 'refused', reason: refusal };
  // One byte past the limit: a file that grew since the stat is caught without reading all of it.
  const bytes = await readAtMost(handle, limit + 1);
  if (bytes.length > limit) return { status: 'refused', reason: `has grown over the limit of ${limit} bytes` };
  return { status: 'read', bytes };
}

function refuse(info: Stats, limit: number): string | null {
  if (info.isSymbolicLink()) return 'is a symbolic link';
  if (!info.isFile()) return 'is not a regular file';
  if (info.size > limit) return `has ${info.size} bytes, over the limit of ${limit}`;
  return null;
}

async function readAtMost(handle: FileHandle, max: number): Promise<Buffer> {
  const buffer = Buffer.alloc(max);
  let filled = 0;
  while (filled < max) {
    const { bytesRead } = await handle.read(buffer, filled, max - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}
