import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * O_NOFOLLOW: the path was resolved to a real path just before, so a symlink at the last component
 * now means the filesystem changed under us; refusing it keeps a write from landing outside.
 * O_NONBLOCK: opening a FIFO for writing must not hang the tool waiting for a reader (it fails
 * with ENXIO, or is refused below). No O_TRUNC: nothing is cut before the file is known to be regular.
 */
const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Writes `text` to the real path `real`, creating or replacing a regular file. */
export async function writeText(real: string, text: string): Promise<void> {
  const handle = await open(real, WRITE_FLAGS, 0o666);
  try {
    if (!(await handle.stat()).isFile()) throw Object.assign(new Error(`not a regular file: ${real}`), { code: 'ENXIO' });
    await handle.truncate(0);
    await handle.writeFile(text, 'utf8');
  } finally {
    await handle.close();
  }
}
