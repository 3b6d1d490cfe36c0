import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, constants, openSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reapLeftoverCommands, recordCommand, type LedgerEntry } from '../../src/tools/sandbox/command-ledger.js';
import { COMMAND_MARKER_VARIABLE, killMarked, startTimeOf } from '../../src/tools/sandbox/process-table.js';
import { useFifoHolders } from '../support/fifo-holders.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-ledger-');
const fifo = useFifoHolders();

/** The markers of the leftovers a test started: their processes are killed after it whatever happened. */
const started: string[] = [];
afterEach(async () => {
  await killMarked(started.splice(0));
});

/** A leftover command: `sh` leading its own group, carrying `marker`, with a child in a session of its own (once it says so); both hold `holders`. */
async function leftover(dir: string, marker: string): Promise<{ pid: number; holders: ReturnType<typeof fifo> }> {
  const holders = fifo(path.join(dir, 'holders'));
  const writer = openSync(path.join(dir, 'holders'), constants.O_WRONLY);
  const child = spawn('/bin/sh', ['-c', "setsid sh -c 'echo setsid >&3; exec sleep 1000' & echo up >&3; exec sleep 1000"], {
    detached: true,
    stdio: ['ignore', 'ignore', 'ignore', writer],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', [COMMAND_MARKER_VARIABLE]: marker },
  });
  closeSync(writer);
  child.unref();
  started.push(marker);
  await holders.read('up');
  await holders.read('setsid');
  return { pid: child.pid!, holders };
}

async function entryFor(marker: string, pid: number, owner: LedgerEntry['owner']): Promise<LedgerEntry> {
  return { version: 1, marker, owner, pid, pidStartTime: await startTimeOf(pid), containment: 'process-group', startedAtMs: Date.now() };
}

describe('the command ledger', () => {
  it('holds an entry while a command runs, with this host as owner, and none after', async () => {
    const dir = path.join(await tempDir(), 'ledger');
    const marker = randomUUID();
    const record = await recordCommand(marker, 'pid-namespace', dir);
    record.started(4242);
    // The pid is written behind the first write, with no signal to await: polled, with a deadline.
    const waitWritten = async () => {
      const deadline = Date.now() + 5_000;
      for (;;) {
        const entry = JSON.parse(await readFile(path.join(dir, `${marker}.json`), 'utf8')) as LedgerEntry;
        if (entry.pid === 4242) return entry;
        if (Date.now() > deadline) throw new Error('the ledger entry never got its pid');
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const entry = await waitWritten();
    expect(entry).toMatchObject({ version: 1, marker, owner: { pid: process.pid, startTime: await startTimeOf(process.pid) }, pid: 4242, containment: 'pid-namespace' });
    await record.close();
    expect(await readdir(dir)).toEqual([]);
  });

  it('leaves the entries of a live owner alone', async () => {
    const base = await tempDir();
    const dir = path.join(base, 'ledger');
    await mkdir(dir, { mode: 0o700 });
    const marker = randomUUID();
    const { pid } = await leftover(base, marker);
    await writeFile(path.join(dir, `${marker}.json`), JSON.stringify(await entryFor(marker, pid, { pid: process.pid, startTime: await startTimeOf(process.pid) })));
    expect(await reapLeftoverCommands({ dir })).toEqual({ reaped: 0, killed: 0 });
    expect(await readdir(dir)).toEqual([`${marker}.json`]);
  });

  it.each([
    ['whose pid is dead', async () => ({ pid: spawnSync('true').pid!, startTime: null })],
    ['whose pid now names another process (another start time)', async () => ({ pid: process.pid, startTime: '1' })],
  ])('ends the group and the marked processes (setsid ones too) of an owner %s, and removes the entry', async (_, owner) => {
    const base = await tempDir();
    const dir = path.join(base, 'ledger');
    await mkdir(dir, { mode: 0o700 });
    const marker = randomUUID();
    const { pid, holders } = await leftover(base, marker);
    await writeFile(path.join(dir, `${marker}.json`), JSON.stringify(await entryFor(marker, pid, await owner())));
    const warnings: string[] = [];
    const report = await reapLeftoverCommands({ dir, warn: (message) => warnings.push(message) });
    expect(report.reaped).toBe(1);
    expect(report.killed).toBeGreaterThanOrEqual(2);
    await holders.allClosed();
    expect(await readdir(dir)).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining('left running by a host that is gone')]);
  });

  it('removes an entry it cannot read, and kills nothing for it', async () => {
    const dir = path.join(await tempDir(), 'ledger');
    await mkdir(dir, { mode: 0o700 });
    await writeFile(path.join(dir, 'garbage.json'), '{"version":1,"marker":"x"');
    await writeFile(path.join(dir, 'wrong.json'), JSON.stringify({ version: 1, marker: 'abcdefgh', owner: { pid: -1 } }));
    const warnings: string[] = [];
    expect(await reapLeftoverCommands({ dir, warn: (message) => warnings.push(message) })).toEqual({ reaped: 0, killed: 0 });
    expect(await readdir(dir)).toEqual([]);
    expect(warnings).toHaveLength(2);
  });

  it('removes a half-written entry whose writer died (a host SIGKILLed mid-write), and keeps a live writer\'s', async () => {
    const dir = path.join(await tempDir(), 'ledger');
    await mkdir(dir, { mode: 0o700 });
    const dead = spawnSync('true').pid!;
    const abandoned = `${randomUUID()}.json.${dead}.tmp`;
    const inFlight = `${randomUUID()}.json.${process.pid}.tmp`;
    await writeFile(path.join(dir, abandoned), '{"version":1');
    await writeFile(path.join(dir, inFlight), '{"version":1');
    expect(await reapLeftoverCommands({ dir })).toEqual({ reaped: 0, killed: 0 });
    expect(await readdir(dir)).toEqual([inFlight]);
  });

  it('does not use a directory others may write to: its entries could name any process', async () => {
    const base = await tempDir();
    const dir = path.join(base, 'ledger');
    await mkdir(dir);
    await chmod(dir, 0o777);
    const marker = randomUUID();
    const { pid } = await leftover(base, marker);
    await writeFile(path.join(dir, `${marker}.json`), JSON.stringify(await entryFor(marker, pid, { pid: spawnSync('true').pid!, startTime: null })));
    const warnings: string[] = [];
    expect(await reapLeftoverCommands({ dir, warn: (message) => warnings.push(message) })).toEqual({ reaped: 0, killed: 0 });
    expect(warnings).toEqual([expect.stringContaining('not using the command ledger')]);
    expect(await readdir(dir)).toEqual([`${marker}.json`]);
    // Recording a command there is skipped too, without failing it.
    const record = await recordCommand(randomUUID(), 'process-group', dir);
    record.started(1);
    await record.close();
    expect(await readdir(dir)).toEqual([`${marker}.json`]);
  });
});
