import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { KyselySessionStorage } from '../../storage/kysely-storage.js';
import { sqliteDatabase } from '../../storage/sqlite.js';
import { createRuntime, scriptedModel, sqliteStorage, type Runtime } from '../../src/index.js';
import { runTurn } from '../support/harness.js';

/** A small tmpfs of our own (as root); null where mounting is not permitted. */
function smallDisk(size: string): { dir: string; unmount(): void } | null {
  const dir = mkdtempSync(path.join(tmpdir(), 'turnchart-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  return {
    dir,
    unmount: () => {
      execFileSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const probe = smallDisk('64k');
probe?.unmount();
if (!probe) console.log('storage error tests on a small tmpfs skipped: mounting is not permitted here');

describe('storage failures report their first cause, typed (issue 9, defect 6)', () => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const keep = (runtime: Runtime) => cleanups.push(() => runtime.shutdown().catch(() => undefined));

  it('a read-only database: createSession throws PersistenceError naming SQLITE_READONLY; a turn fails persistence_error naming it', async () => {
    const db = sqliteDatabase({ filename: ':memory:' });
    const runtime = await createRuntime({ storage: new KyselySessionStorage(db, { dialect: 'sqlite' }), model: scriptedModel([{ text: 'never' }]) });
    keep(runtime);
    const session = await runtime.createSession();
    // From here on the connection refuses every write, as a read-only file does.
    await sql`pragma query_only = 1`.execute(db);
    await expect(runtime.createSession()).rejects.toMatchObject({ code: 'PersistenceError', message: expect.stringContaining('SQLITE_READONLY') });
    const { outcome } = await runTurn(session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'persistence_error' });
    expect((outcome as { message: string }).message).toMatch(/readonly|read-only/i);
    expect((outcome as { message: string }).message).not.toMatch(/cannot rollback/);
  });

  it.skipIf(!probe)('a full disk: the turn fails persistence_error naming SQLITE_FULL, not the failed rollback after it', async () => {
    const disk = smallDisk('2m')!;
    cleanups.push(() => disk.unmount());
    const file = path.join(disk.dir, 'sessions.db');
    const runtime = await createRuntime({ storage: sqliteStorage({ filename: file }), model: scriptedModel([{ text: 'x'.repeat(600_000) }]) });
    keep(runtime);
    const session = await runtime.createSession();
    // Fill what is left of the disk with a file SQLite cannot grow into.
    try {
      writeFileSync(path.join(disk.dir, 'ballast'), Buffer.alloc(2 * 1024 * 1024));
    } catch {
      // ENOSPC: the disk is full, which is the point.
    }
    const { outcome } = await runTurn(session, 'x'.repeat(400_000), 'big');
    expect(outcome).toMatchObject({ status: 'failed', code: 'persistence_error' });
    expect((outcome as { message: string }).message).toMatch(/full/i);
    expect((outcome as { message: string }).message).not.toMatch(/cannot rollback/);
  });

  it('waits out another process\'s lock without stalling the event loop: other sessions go on, and the turn completes once it is released', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'turnchart-busy-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'sessions.db');
    const runtime = await createRuntime({ storage: sqliteStorage({ filename: file }), model: scriptedModel([{ text: 'waited' }]) });
    keep(runtime);
    const other = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([{ text: 'meanwhile' }]) });
    keep(other);
    const session = await runtime.createSession();
    const elsewhere = await other.createSession();

    // Another process (a second connection, as a CLI inspecting the file would be) holds the write lock.
    const intruder = new BetterSqlite3(file);
    cleanups.push(() => {
      intruder.close();
    });
    intruder.exec('BEGIN IMMEDIATE');
    const blocked = runTurn(session, 'go');
    // While the lock is held, a session on another database completes a whole turn in this same process.
    expect((await runTurn(elsewhere, 'go')).outcome).toEqual({ status: 'completed', finalText: 'meanwhile' });
    intruder.exec('COMMIT');
    expect((await blocked).outcome).toEqual({ status: 'completed', finalText: 'waited' });
  });
});
