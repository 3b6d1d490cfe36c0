import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatMessage, StoredMessage } from '../../src/protocol/messages.js';
import { FencedWriteError, type LeaseRequest, type SessionRow, type SessionStorage } from '../../storage/session-storage.js';
import { postgresTarget, sqliteFileTarget, type Connected, type ContractTarget, type Location } from './targets.js';

const T0 = 1_700_000_000_000;
const session = (id: string): SessionRow => ({ id, agent: 'default', permissionMode: 'ask', workspaceDir: null, createdAtMs: T0, busyPolicy: 'enqueue', updateSequence: 100 });
const lease = (ownerId: string, ttlMs = 60_000, host = 'test-host'): LeaseRequest => ({ ownerId, host, pid: 424242, ttlMs });
const user = (text: string): ChatMessage => ({ role: 'user', kind: 'normal', text });
const message = (turnId: string, sessionId: string, sequence: number, text = `m${sequence}`): StoredMessage => ({
  id: `${turnId}-${sequence}`,
  sessionId,
  turnId,
  sequence,
  createdAtMs: T0 + sequence,
  message: user(text),
});
const turnStart = (id: string, sessionId: string, clientRequestId = `req-${id}`) => ({
  id,
  sessionId,
  clientRequestId,
  startedAtMs: T0,
  run: { id: `run-${id}`, trigger: 'message' as const },
});

function describeOwnership(name: string, target: ContractTarget): void {
  describe(`${name}: leases, fencing tokens, queued turns and runs`, () => {
    let location: Location;
    let conn: Connected;
    let storage: SessionStorage;
    beforeEach(async () => {
      location = await target.create();
      conn = location.connect();
      storage = conn.storage;
      await storage.migrate();
    });
    afterEach(async () => {
      await storage.close();
      await location.drop();
    });

    it('creates a session held by its creator with token 1, and another owner cannot take it while the lease lives', async () => {
      expect(await storage.createSession(session('s1'), lease('A'))).toBe(1);
      expect(await storage.acquireSession('s1', lease('B'))).toMatchObject({ ok: false, reason: 'owned', holder: { ownerId: 'A', host: 'test-host', pid: 424242 } });
      expect(await storage.acquireSession('nope', lease('B'))).toEqual({ ok: false, reason: 'unknown' });
      // The holder itself takes it again (a reopen), with a new token and more sequences reserved.
      const again = await storage.acquireSession('s1', lease('A'), 50);
      expect(again).toMatchObject({ ok: true, fence: 2, session: { id: 's1', busyPolicy: 'enqueue', updateSequence: 100 } });
      expect((await storage.getSession('s1'))?.updateSequence).toBe(150);
    });

    it('hands a session over once its lease ran out, correcting what the last owner left running, and refuses that owner\'s writes', async () => {
      const old = await storage.createSession(session('s1'), lease('A', 1));
      await storage.beginTurn(turnStart('t1', 's1'), [message('t1', 's1', 0)], old);
      await storage.writeSpans([{ type: 'start', span: { id: 'sp', sessionId: 's1', turnId: 't1', kind: 'turn', name: 'turn', source: 'system', status: 'running', errorCode: null, startedAtMs: T0, endedAtMs: null } }]);
      await expireLeases(conn);
      const taken = await storage.acquireSession('s1', lease('B'));
      expect(taken).toMatchObject({ ok: true, fence: old + 1, corrected: { interruptedTurns: 1, unknownSpans: 1 } });
      expect(await storage.getTurn('t1')).toMatchObject({ status: 'interrupted', errorCode: 'process_restart' });

      // A, unaware, writes on: every kind of write is refused and changes nothing.
      await expect(storage.appendMessage(message('t1', 's1', 1), old)).rejects.toBeInstanceOf(FencedWriteError);
      await expect(storage.beginTurn(turnStart('t2', 's1'), [message('t2', 's1', 1)], old)).rejects.toBeInstanceOf(FencedWriteError);
      await expect(storage.endTurn('t1', { status: 'completed', errorCode: null, errorMessage: null, finalText: 'late', finishedAtMs: T0 }, old)).rejects.toBeInstanceOf(FencedWriteError);
      await expect(storage.setPermissionMode('s1', 'auto', old)).rejects.toBeInstanceOf(FencedWriteError);
      await expect(storage.savePlan({ turnId: 't1', sessionId: 's1', plan: { plan: [] }, updatedAtMs: T0 }, old)).rejects.toBeInstanceOf(FencedWriteError);
      await expect(storage.reserveUpdateSequence('s1', 10_000, old)).rejects.toBeInstanceOf(FencedWriteError);
      expect((await storage.listMessages('s1')).map((m) => m.id)).toEqual(['t1-0']);
      expect(await storage.getTurn('t2')).toBeUndefined();
      expect((await storage.getSession('s1'))?.permissionMode).toBe('ask');
      // B's own writes go through.
      if (!taken.ok) throw new Error('not taken');
      await storage.appendMessage(message('t1', 's1', 1), taken.fence);
      expect((await storage.listMessages('s1')).map((m) => m.id)).toEqual(['t1-0', 't1-1']);
    });

    it('renews the leases an owner still holds and reports the ones it lost; a released session is free at once', async () => {
      await storage.createSession(session('s1'), lease('A'));
      await storage.createSession(session('s2'), lease('A', 1));
      await expireLeases(conn, 's2');
      await storage.acquireSession('s2', lease('B'));
      expect((await storage.renewLeases(lease('A'), ['s1', 's2'])).sort()).toEqual(['s1']);
      await storage.releaseSession('s1', 'A', 123);
      expect(await storage.acquireSession('s1', lease('B'))).toMatchObject({ ok: true, corrected: { interruptedTurns: 0 }, session: { updateSequence: 123 } });
    });

    it('lists the live owners on a host, and expiring one frees its sessions', async () => {
      await storage.createSession(session('s1'), lease('A'));
      await storage.createSession(session('s2'), lease('C', 60_000, 'other-host'));
      expect(await storage.liveOwnersOn('test-host')).toEqual([{ ownerId: 'A', host: 'test-host', pid: 424242 }]);
      await storage.expireOwner('A');
      expect(await storage.liveOwnersOn('test-host')).toEqual([]);
      expect(await storage.acquireSession('s1', lease('B'))).toMatchObject({ ok: true });
    });

    it("reads a session's lease holder without taking anything: none once it is released, expired or unknown", async () => {
      await storage.createSession(session('s1'), lease('A'));
      const holder = await storage.leaseHolder('s1');
      expect(holder).toMatchObject({ ownerId: 'A', host: 'test-host', pid: 424242 });
      expect(holder!.remainingMs).toBeGreaterThan(0);
      expect(holder!.remainingMs).toBeLessThanOrEqual(60_000);
      expect(await storage.acquireSession('s1', lease('B'))).toMatchObject({ ok: false, reason: 'owned' });
      await storage.expireOwner('A');
      expect(await storage.leaseHolder('s1')).toBeNull();
      await storage.acquireSession('s1', lease('B'));
      await storage.releaseSession('s1', 'B', 0);
      expect(await storage.leaseHolder('s1')).toBeNull();
      expect(await storage.leaseHolder('nope')).toBeNull();
    });

    it('corrects at startup only the sessions nobody holds', async () => {
      const a = await storage.createSession(session('held'), lease('A'));
      const b = await storage.createSession(session('gone'), lease('B', 1));
      await storage.beginTurn(turnStart('t-held', 'held'), [], a);
      await storage.beginTurn(turnStart('t-gone', 'gone'), [], b);
      await expireLeases(conn, 'gone');
      expect(await storage.correctInterrupted(T0)).toEqual({ interruptedTurns: 1, unknownSpans: 0 });
      expect((await storage.getTurn('t-held'))?.status).toBe('running');
      expect((await storage.getTurn('t-gone'))?.status).toBe('interrupted');
      await expect(storage.endTurn('t-gone', { status: 'completed', errorCode: null, errorMessage: null, finalText: 'x', finishedAtMs: T0 }, b)).rejects.toBeInstanceOf(FencedWriteError);
    });

    it('stores queued turns with their input and run, lists them in order, starts one as running, cancels another', async () => {
      const fence = await storage.createSession(session('s1'), lease('A'));
      await storage.beginTurn(turnStart('t0', 's1'), [message('t0', 's1', 0)], fence);
      for (const id of ['q1', 'q2']) {
        await storage.enqueueTurn({ id, sessionId: 's1', clientRequestId: `req-${id}`, runId: `run-${id}`, trigger: 'api_action', input: [user(`input of ${id}`)], queuedAtMs: T0 }, fence);
      }
      expect(await storage.listQueuedTurns('s1')).toEqual([
        { id: 'q1', sessionId: 's1', clientRequestId: 'req-q1', runId: 'run-q1', trigger: 'api_action', input: [user('input of q1')], queuedAtMs: T0 },
        { id: 'q2', sessionId: 's1', clientRequestId: 'req-q2', runId: 'run-q2', trigger: 'api_action', input: [user('input of q2')], queuedAtMs: T0 },
      ]);
      await storage.endTurn('t0', { status: 'completed', errorCode: null, errorMessage: null, finalText: 'x', finishedAtMs: T0 }, fence);
      await storage.beginTurn({ id: 'q1', sessionId: 's1', clientRequestId: 'req-q1', startedAtMs: T0 + 5, fromQueue: true }, [message('q1', 's1', 1)], fence);
      await storage.cancelQueuedTurn('q2', T0 + 6, fence);
      expect(await storage.listQueuedTurns('s1')).toEqual([]);
      expect(await storage.getTurn('q1')).toMatchObject({ status: 'running', runId: 'run-q1', trigger: 'api_action', startedAtMs: T0 + 5 });
      expect(await storage.getTurn('q2')).toMatchObject({ status: 'cancelled', finishedAtMs: T0 + 6 });
      await expect(storage.cancelQueuedTurn('q1', T0, fence)).rejects.toThrow(/not queued/);
      expect(await storage.getTurn('t0')).toMatchObject({ runId: 'run-t0', trigger: 'message' });
    });

    it('beginTurn with a stale token writes nothing, for a new turn with its run and messages or for a queued one', async () => {
      const old = await storage.createSession(session('s1'), lease('A', 1));
      await storage.enqueueTurn({ id: 'q1', sessionId: 's1', clientRequestId: 'req-q1', runId: 'run-q1', trigger: 'message', input: [user('later')], queuedAtMs: T0 }, old);
      await expireLeases(conn);
      const taken = await storage.acquireSession('s1', lease('B'));
      if (!taken.ok) throw new Error('not taken');

      await expect(storage.beginTurn(turnStart('t1', 's1'), [message('t1', 's1', 0), message('t1', 's1', 1)], old)).rejects.toBeInstanceOf(FencedWriteError);
      await expect(storage.beginTurn({ ...turnStart('q1', 's1'), fromQueue: true }, [message('q1', 's1', 0)], old)).rejects.toBeInstanceOf(FencedWriteError);
      await expect(storage.beginTurn(turnStart('t9', 'ghost'), [], old)).rejects.toBeInstanceOf(FencedWriteError);
      const q2 = { id: 'q2', sessionId: 's1', clientRequestId: 'req-q2', runId: 'run-q2', trigger: 'message' as const, input: [user('even later')], queuedAtMs: T0 };
      await expect(storage.enqueueTurn(q2, old)).rejects.toBeInstanceOf(FencedWriteError);
      expect(await storage.getTurn('q2')).toBeUndefined();
      expect(await conn.db.selectFrom('runs').select('id').where('turn_id', '=', 'q2').execute()).toEqual([]);
      expect(await storage.getTurn('t1')).toBeUndefined();
      expect(await conn.db.selectFrom('runs').select('id').where('turn_id', '=', 't1').execute()).toEqual([]);
      expect(await storage.listMessages('s1')).toEqual([]);
      expect((await storage.listQueuedTurns('s1')).map((t) => t.id)).toEqual(['q1']);

      // The new owner starts the queued turn; a second start of it is refused and leaves its messages unwritten.
      await storage.beginTurn({ ...turnStart('q1', 's1'), startedAtMs: T0 + 5, fromQueue: true }, [message('q1', 's1', 0), message('q1', 's1', 1)], taken.fence);
      expect(await storage.getTurn('q1')).toMatchObject({ status: 'running', startedAtMs: T0 + 5, runId: 'run-q1', trigger: 'message' });
      expect(await storage.listQueuedTurns('s1')).toEqual([]);
      await expect(storage.beginTurn({ ...turnStart('q1', 's1'), fromQueue: true }, [message('q1', 's1', 2)], taken.fence)).rejects.toThrow(/turn q1 is not queued/);
      await expect(storage.beginTurn({ ...turnStart('nope', 's1'), fromQueue: true }, [message('nope', 's1', 3)], taken.fence)).rejects.toThrow(/turn nope is not queued/);
      await expect(storage.beginTurn({ ...turnStart('q1', 's1'), fromQueue: true }, [])).rejects.toThrow(/not queued/);
      expect((await storage.listMessages('s1')).map((m) => m.id)).toEqual(['q1-0', 'q1-1']);
      // The new owner's own enqueue goes through, after the last position the session has used.
      await storage.enqueueTurn(q2, taken.fence);
      expect(await storage.listQueuedTurns('s1')).toEqual([q2]);
      const positions = await conn.db.selectFrom('turns').select(['id', 'queue_position']).where('session_id', '=', 's1').orderBy('id').execute();
      expect(positions.map((p) => [p.id, p.queue_position === null ? null : Number(p.queue_position)])).toEqual([
        ['q1', null],
        ['q2', 1],
      ]);
    });

    it.skipIf(target.dialect !== 'postgres')('beginTurn waits for a takeover holding the session row, then is refused', async () => {
      const fence = await storage.createSession(session('s1'), lease('A'));
      let begun: Promise<unknown> = Promise.resolve();
      await conn.db.transaction().execute(async (trx) => {
        // What acquireSession does to the row, left uncommitted while the old owner begins a turn.
        await trx.updateTable('sessions').set({ fencing_token: fence + 1 }).where('id', '=', 's1').execute();
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        const takeover = rows[0]!.pid;
        begun = storage.beginTurn(turnStart('t1', 's1'), [message('t1', 's1', 0)], fence).then(
          () => 'written',
          (error: unknown) => error,
        );
        // The statement's share lock waits on the row: seen from a third connection before the takeover commits.
        let blocked = false;
        for (let probe = 0; probe < 10_000 && !blocked; probe++) {
          const waiting = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where ${takeover} = any(pg_blocking_pids(pid))`.execute(conn.db);
          blocked = Number(waiting.rows[0]?.n) > 0;
        }
        expect(blocked).toBe(true);
      });
      expect(await begun).toBeInstanceOf(FencedWriteError);
      expect(await storage.getTurn('t1')).toBeUndefined();
      expect(await storage.listMessages('s1')).toEqual([]);
    });

    it('beginTurn is atomic with a run and a token: a taken sequence leaves neither the turn, its run nor any message', async () => {
      const fence = await storage.createSession(session('s1'), lease('A'));
      await storage.beginTurn(turnStart('t0', 's1'), [message('t0', 's1', 0)], fence);
      await storage.endTurn('t0', { status: 'completed', errorCode: null, errorMessage: null, finalText: 'x', finishedAtMs: T0 }, fence);
      await expect(storage.beginTurn(turnStart('t1', 's1'), [message('t1', 's1', 1), message('t1', 's1', 0, 'clash')], fence)).rejects.toThrow();
      expect(await storage.getTurn('t1')).toBeUndefined();
      expect(await conn.db.selectFrom('runs').select('id').where('turn_id', '=', 't1').execute()).toEqual([]);
      expect((await storage.listMessages('s1')).map((m) => m.id)).toEqual(['t0-0']);
      // Without a token the same holds, and a clean start goes through with its run.
      await expect(storage.beginTurn(turnStart('t1', 's1'), [message('t1', 's1', 0, 'clash')])).rejects.toThrow();
      await storage.beginTurn(turnStart('t1', 's1'), [message('t1', 's1', 1), message('t1', 's1', 2)], fence);
      expect(await storage.getTurn('t1')).toMatchObject({ status: 'running', runId: 'run-t1', trigger: 'message' });
      expect((await storage.listMessages('s1')).map((m) => m.id)).toEqual(['t0-0', 't1-1', 't1-2']);
    });

    it('enforces one turn per clientRequestId and session in the database itself', async () => {
      const fence = await storage.createSession(session('s1'), lease('A'));
      await storage.beginTurn(turnStart('t1', 's1', 'same'), [], fence);
      await expect(storage.beginTurn(turnStart('t2', 's1', 'same'), [], fence)).rejects.toThrow();
      await expect(
        storage.enqueueTurn({ id: 't3', sessionId: 's1', clientRequestId: 'same', runId: 'run-t3', trigger: 'message', input: [], queuedAtMs: T0 }, fence),
      ).rejects.toThrow();
      expect((await storage.listTurns('s1')).map((t) => t.id)).toEqual(['t1']);
    });

    it('pages sessions newest first and messages by sequence', async () => {
      for (const [i, id] of ['a', 'b', 'c'].entries()) await storage.createSession({ ...session(id), createdAtMs: T0 + i });
      const first = await storage.listSessions({ limit: 2 });
      expect(first.map((s) => s.id)).toEqual(['c', 'b']);
      expect((await storage.listSessions({ limit: 2, before: { createdAtMs: T0 + 1, id: 'b' } })).map((s) => s.id)).toEqual(['a']);
      await storage.beginTurn(turnStart('t', 'a'), [0, 1, 2, 3].map((n) => message('t', 'a', n)));
      expect((await storage.listMessages('a', { afterSequence: 1, limit: 1 })).map((m) => m.sequence)).toEqual([2]);
    });
  });
}

/** Ends leases as the database clock sees them, without waiting. */
async function expireLeases(conn: Connected, sessionId?: string): Promise<void> {
  const base = conn.db.updateTable('sessions').set({ lease_expires_at_ms: 1 });
  await (sessionId ? base.where('id', '=', sessionId) : base).execute();
}

describeOwnership('SQLite', sqliteFileTarget);
const url = process.env.TEST_DATABASE_URL;
describe.skipIf(!url)('PostgreSQL', () => {
  describeOwnership('PostgreSQL', postgresTarget(url ?? ''));
});
