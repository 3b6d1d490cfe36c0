import { statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTLE_MS, SettledReads } from '../../src/util/settled-reads.js';
import { useTempDirs } from '../context/world-state/temp-dir.js';

const tempDir = useTempDirs();

/** A load that counts its calls and answers a fresh value each time. */
function counted(): { load: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return { load: async () => `read ${++calls}`, calls: () => calls };
}

// Sampled this long after the directory was made: its stamps are settled without waiting.
const later = () => Date.now() + SETTLE_MS + 1_000;

describe('SettledReads', () => {
  it('reuses a settled read while the entry is unchanged, and reads again once an entry is added', async () => {
    const dir = await tempDir();
    const reads = new SettledReads<string>();
    const { load, calls } = counted();
    expect(await reads.read(dir, statSync(dir, { bigint: true }), later(), load)).toBe('read 1');
    expect(await reads.read(dir, statSync(dir, { bigint: true }), later(), load)).toBe('read 1');
    expect(calls()).toBe(1);

    writeFileSync(path.join(dir, 'new.txt'), '');
    expect(await reads.read(dir, statSync(dir, { bigint: true }), later(), load)).toBe('read 2');
  });

  it('reads again when the modification time is set back to what it was (the change time moves with it)', async () => {
    const dir = await tempDir();
    const reads = new SettledReads<string>();
    const { load } = counted();
    // A whole second, which `utimes` sets exactly.
    utimesSync(dir, 1_000, 1_000);
    const before = statSync(dir, { bigint: true });
    await reads.read(dir, before, later(), load);
    writeFileSync(path.join(dir, 'new.txt'), '');
    utimesSync(dir, 1_000, 1_000);
    expect(statSync(dir, { bigint: true }).mtimeNs).toBe(before.mtimeNs);
    expect(await reads.read(dir, statSync(dir, { bigint: true }), later(), load)).toBe('read 2');
  });

  it('keeps nothing read while the entry changed within the settling margin: a change in the same stamp could follow', async () => {
    const dir = await tempDir();
    const reads = new SettledReads<string>();
    const { load, calls } = counted();
    await reads.read(dir, statSync(dir, { bigint: true }), Date.now(), load);
    await reads.read(dir, statSync(dir, { bigint: true }), Date.now(), load);
    expect(calls()).toBe(2);
  });

  it('a file rewritten with the same size is read again', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'AGENTS.md');
    writeFileSync(file, 'one');
    const reads = new SettledReads<string>();
    const { load } = counted();
    await reads.read(file, statSync(file, { bigint: true }), later(), load);
    writeFileSync(file, 'two');
    expect(await reads.read(file, statSync(file, { bigint: true }), later(), load)).toBe('read 2');
  });

  it('forgets the oldest read past its capacity', async () => {
    const dirs = [await tempDir(), await tempDir(), await tempDir()];
    const reads = new SettledReads<string>(2);
    const { load, calls } = counted();
    for (const dir of dirs) await reads.read(dir, statSync(dir, { bigint: true }), later(), load);
    await reads.read(dirs[2]!, statSync(dirs[2]!, { bigint: true }), later(), load);
    await reads.read(dirs[1]!, statSync(dirs[1]!, { bigint: true }), later(), load);
    expect(calls()).toBe(3);
    await reads.read(dirs[0]!, statSync(dirs[0]!, { bigint: true }), later(), load);
    expect(calls()).toBe(4);
  });

  it('a failed read keeps nothing: the next sample reads again', async () => {
    const dir = await tempDir();
    const reads = new SettledReads<string>();
    await expect(reads.read(dir, statSync(dir, { bigint: true }), later(), () => Promise.reject(new Error('EIO')))).rejects.toThrow('EIO');
    expect(await reads.read(dir, statSync(dir, { bigint: true }), later(), async () => 'read')).toBe('read');
  });
});
