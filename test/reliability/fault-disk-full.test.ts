import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteStorage, type SessionStorage, type StoredMessage } from '../../src/index.js';
import { tally } from '../support/reliability-tally.js';
import { withHook, writesMessage, type BeforeCall } from '../support/storage-hook.js';
import { fillDisk, freeBytes, mountTmpfs, tmpfsUnavailable, type Tmpfs } from '../support/tmpfs.js';
import { expectNextTurnWorks, expectNothingLost, expectStoredAs, expectTypedEnd, faultTurn, startFaultTurn, type FaultTurn } from './fault-turn.js';

/**
 * Issue 9, item 3: the disk holding a SQLite database fills up in the middle of a turn — a small
 * tmpfs the test mounts, filled to the last byte. The write that finds no space fails (SQLITE_FULL);
 * the turn fails `persistence_error`, everything stored before is still there when the file is opened
 * again, and once space is freed the next turn works.
 */

const unavailable = await tmpfsUnavailable();
if (unavailable) console.log(`full-disk cases: skipped — ${unavailable}`);

const mounts: Tmpfs[] = [];
afterEach(async () => {
  for (const m of mounts.splice(0)) await m.unmount();
});

/** Reads the file on a connection of its own. */
async function reading<T>(file: string, read: (storage: SessionStorage) => Promise<T>): Promise<T> {
  const reader = sqliteStorage({ filename: file });
  try {
    return await read(reader);
  } finally {
    await reader.close();
  }
}

const storedNow = (file: string, sessionId: string): Promise<StoredMessage[]> => reading(file, (s) => s.listMessages(sessionId));

interface DiskCase {
  file: string;
  before: StoredMessage[];
  free?: () => Promise<void>;
}

/** Fills the disk after noting what is stored; the runtime's next write finds no space. */
async function fill(c: DiskCase, dir: string, sessionId: string): Promise<void> {
  c.before = await storedNow(c.file, sessionId);
  c.free = (await fillDisk(dir)).free;
  expect(await freeBytes(dir)).toBe(0);
}

async function caseOnTmpfs(before: (c: DiskCase, dir: string, turn: () => FaultTurn) => BeforeCall) {
  const mount = await mountTmpfs(8 * 1024);
  mounts.push(mount);
  const c: DiskCase = { file: join(mount.dir, 'sessions.db'), before: [] };
  const holder: { turn?: FaultTurn } = {};
  const storage = withHook(sqliteStorage({ filename: c.file }), before(c, mount.dir, () => holder.turn!));
  holder.turn = await faultTurn(storage);
  return { c, turn: holder.turn, storage, dir: mount.dir };
}

/** The checks every case shares, from the failed turn on. */
async function expectRecovered(c: DiskCase, turn: FaultTurn, storage: SessionStorage, turnId: string): Promise<void> {
  const outcome = await turn.session.waitForTurn(turnId);
  try {
    expectTypedEnd(outcome, ['persistence_error']);
    console.log(`disk full mid-turn: the turn ended ${JSON.stringify(outcome)}`);
    expect(outcome).toMatchObject({ message: expect.stringMatching(/database or disk is full|SQLITE_FULL/) });
    expect(await storedNow(c.file, turn.session.id)).toEqual(c.before);
    await c.free!();
    await expectNextTurnWorks(turn, storage);
  } finally {
    await turn.runtime.shutdown();
  }
  // Opened again from the file: what was stored before the disk filled is all there, and the turn is closed as it ended.
  expectNothingLost(c.before, await storedNow(c.file, turn.session.id));
  await reading(c.file, (s) => expectStoredAs(s, turnId, outcome));
  tally('fault cases: disk full (sqlite)');
}

describe.skipIf(unavailable !== null)('a full disk under SQLite mid-turn (a tmpfs filled to the last byte)', () => {
  it('filled while the model streams: the assistant message cannot be written', async () => {
    const { c, turn, storage, dir } = await caseOnTmpfs(() => () => undefined);
    const turnId = await startFaultTurn(turn);
    await turn.reached;
    await fill(c, dir, turn.session.id);
    turn.release();
    await expectRecovered(c, turn, storage, turnId);
    expect(turn.toolRuns()).toBe(0);
  });

  it('filled just before the tool result is written: the result cannot be written', async () => {
    let struck = false;
    const { c, turn, storage } = await caseOnTmpfs((c, dir, turn) => async (method, args) => {
      if (struck || !writesMessage(method, args, 'tool')) return;
      struck = true;
      await fill(c, dir, turn().session.id);
    });
    const turnId = await startFaultTurn(turn);
    turn.release();
    await expectRecovered(c, turn, storage, turnId);
    expect(struck).toBe(true);
    expect(turn.toolRuns()).toBe(1);
  });
});
