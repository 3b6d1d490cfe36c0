import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../src/protocol/messages.js';
import { StorageFaultError, withFaults, type FaultyStorage } from '../../storage/faulty-storage.js';
import type { SessionRow } from '../../storage/session-storage.js';
import { sqliteStorage } from '../../storage/sqlite.js';

const session = (id: string): SessionRow => ({ id, agent: 'coder', permissionMode: 'ask', workspaceDir: null, createdAtMs: 1, busyPolicy: 'reject', updateSequence: 0 });
const message = (sequence: number): StoredMessage => ({
  id: `m${sequence}`,
  sessionId: 's1',
  turnId: 't1',
  sequence,
  createdAtMs: sequence,
  message: { role: 'user', kind: 'normal', text: `#${sequence}` },
});
const turn = { id: 't1', sessionId: 's1', clientRequestId: 'r1', startedAtMs: 1 };

describe('withFaults', () => {
  let storage: FaultyStorage;

  beforeEach(async () => {
    storage = withFaults(sqliteStorage({ filename: ':memory:' }));
    await storage.migrate();
  });

  afterEach(async () => {
    storage.heal();
    await storage.close();
  });

  it('passes calls through and records them in order', async () => {
    await storage.createSession(session('s1'));
    await storage.beginTurn(turn, [message(0)]);
    expect(await storage.getSession('s1')).toEqual(session('s1'));

    expect(storage.calls.map((c) => c.method)).toEqual(['migrate', 'createSession', 'beginTurn', 'getSession']);
    expect(storage.calls[2]).toEqual({ method: 'beginTurn', args: [turn, [message(0)]], failed: false });
  });

  it('failNext fails the given number of calls without reaching the database, then recovers', async () => {
    storage.failNext('createSession');
    await expect(storage.createSession(session('s1'))).rejects.toBeInstanceOf(StorageFaultError);
    expect(await storage.getSession('s1')).toBeUndefined();

    await storage.createSession(session('s1'));
    expect(await storage.getSession('s1')).toEqual(session('s1'));

    const custom = new Error('disk full');
    storage.failNext('appendMessage', 2, custom);
    await storage.beginTurn(turn, []);
    await expect(storage.appendMessage(message(0))).rejects.toBe(custom);
    await expect(storage.appendMessage(message(0))).rejects.toBe(custom);
    await storage.appendMessage(message(0));
    expect(await storage.listMessages('s1')).toEqual([message(0)]);

    expect(storage.calls.filter((c) => c.failed).map((c) => c.method)).toEqual(['createSession', 'appendMessage', 'appendMessage']);
  });

  it('a failed beginTurn leaves neither turn nor messages behind', async () => {
    await storage.createSession(session('s1'));
    storage.failNext('beginTurn');
    await expect(storage.beginTurn(turn, [message(0)])).rejects.toThrow(/injected storage fault in beginTurn/);
    expect(await storage.getTurn('t1')).toBeUndefined();
    expect(await storage.listMessages('s1')).toEqual([]);
  });

  it('failAlways fails every call of that method until healed, leaving other methods alone', async () => {
    await storage.createSession(session('s1'));
    storage.failAlways('setPermissionMode');
    for (let i = 0; i < 3; i++) await expect(storage.setPermissionMode('s1', 'auto')).rejects.toBeInstanceOf(StorageFaultError);
    expect((await storage.getSession('s1'))?.permissionMode).toBe('ask');

    storage.heal('setPermissionMode');
    await storage.setPermissionMode('s1', 'auto');
    expect((await storage.getSession('s1'))?.permissionMode).toBe('auto');
  });

  it('failWhen fails only the calls matching the predicate', async () => {
    await storage.createSession(session('s1'));
    await storage.beginTurn(turn, []);
    storage.failWhen('appendMessage', (m) => m.sequence === 1);

    await storage.appendMessage(message(0));
    await expect(storage.appendMessage(message(1))).rejects.toBeInstanceOf(StorageFaultError);
    await storage.appendMessage(message(2));
    expect((await storage.listMessages('s1')).map((m) => m.sequence)).toEqual([0, 2]);
    expect(storage.calls.filter((c) => c.method === 'appendMessage').map((c) => c.failed)).toEqual([false, true, false]);
  });

  it('heal() without a method clears every fault', async () => {
    storage.failAlways('createSession');
    storage.failNext('getSession', 5);
    storage.failWhen('listTurns', () => true);
    storage.heal();

    await storage.createSession(session('s1'));
    expect(await storage.getSession('s1')).toEqual(session('s1'));
    expect(await storage.listTurns('s1')).toEqual([]);
  });
});
