import { mkdir, open, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRegularFile } from '../../src/skills/bounded-read.js';
import { useTempDirs } from '../context/world-state/temp-dir.js';
import { useFifos } from './fifo.js';

const tempDir = useTempDirs();
const mkfifo = useFifos();

describe('readRegularFile', () => {
  it('reads a regular file of up to the limit, and an empty one', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'exact'), 'abcd');
    await writeFile(path.join(dir, 'empty'), '');
    expect(await readRegularFile(path.join(dir, 'exact'), 4)).toEqual({ status: 'read', bytes: Buffer.from('abcd') });
    expect(await readRegularFile(path.join(dir, 'empty'), 4)).toEqual({ status: 'read', bytes: Buffer.alloc(0) });
  });

  it('is missing when the file or a folder on its path is not there, or a folder on the path is a file', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'file'), 'x');
    for (const file of ['nope', 'no/such', 'file/below']) expect(await readRegularFile(path.join(dir, file), 4)).toEqual({ status: 'missing' });
  });

  it('refuses a file over the limit by its size', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'big');
    const handle = await open(file, 'w');
    await handle.truncate(300 * 1024 * 1024);
    await handle.close();
    expect(await readRegularFile(file, 4)).toEqual({ status: 'refused', reason: `has ${300 * 1024 * 1024} bytes, over the limit of 4` });
  });

  it('refuses links (also dangling ones), directories, FIFOs and devices without opening them', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'real'), 'x');
    await symlink(path.join(dir, 'real'), path.join(dir, 'link'));
    await symlink(path.join(dir, 'gone'), path.join(dir, 'dangling'));
    await mkdir(path.join(dir, 'folder'));
    await mkfifo(path.join(dir, 'fifo'));
    const refused = (reason: string) => ({ status: 'refused', reason });
    expect(await readRegularFile(path.join(dir, 'link'), 4)).toEqual(refused('is a symbolic link'));
    expect(await readRegularFile(path.join(dir, 'dangling'), 4)).toEqual(refused('is a symbolic link'));
    expect(await readRegularFile(path.join(dir, 'folder'), 4)).toEqual(refused('is not a regular file'));
    expect(await readRegularFile(path.join(dir, 'fifo'), 4)).toEqual(refused('is not a regular file'));
    expect(await readRegularFile('/dev/zero', 4)).toEqual(refused('is not a regular file'));
  });
});
