import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeaseRequest, SessionRow, SessionStorage, StreamSlot } from '../../storage/session-storage.js';
import { T0 } from '../support/spans.js';
import { indexNames, postgresTarget, sqliteFileTarget, sqliteMemoryTarget, type Connected, type ContractTarget, type Location } from './targets.js';

/**
 * Issue 25: what the per-principal quotas count, on both dialects (migration 009): sessions held
 * under a live lease, running and queued turns and those of a window, the tokens of a UTC day, and
 * stream slots that stop counting once they expire.
 */

const session = (id: string, principal: string | null, overrides: Partial<SessionRow> = {}): SessionRow => ({
  id,
  agent: 'coder',
  permissionMode: 'ask',
  workspaceDir: null,
  createdAtMs: T0,
  busyPolicy: 'reject',
  updateSequence: 0,
  ...(principal !== null && { principal }),
  ...overrides,
});

const lease = (ownerId: string): LeaseRequest => ({ ownerId, host: 'test-host', pid: 424242, ttlMs: 60_000 });

const slot = (id: string, principal: string, ownerId = 'host-A', ttlMs = 60_000): StreamSlot => ({ id, principal, ownerId, ttlMs });

const completed = { status: 'completed' as const, errorCode: null, errorMessage: null, finalText: 'done', finishedAtMs: T0 + 5 };

function describeQuotaStorage(name: string, target: ContractTarget): void {
  describe(name, () => {
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

    it('counts the principal\'s sessions held under a live lease: not released ones, not expired ones, not another principal\'s', async () => {
      await storage.createSession(session('a1', 'alice'), lease('A'));
      await storage.createSession(session('a2', 'alice'), lease('B'));
      await storage.createSession(session('a3', 'alice'));
      await storage.createSession(session('a4', 'alice'), lease('A'));
      await storage.createSession(session('b1', 'bob'), lease('A'));
      await storage.createSession(session('n1', null), lease('A'));
      expect(await storage.heldSessionCount('alice')).toBe(3);
      expect(await storage.heldSessionCount('bob')).toBe(1);
      expect(await storage.heldSessionCount('carol')).toBe(0);

      await storage.releaseSession('a4', 'A', 0);
      expect(await storage.heldSessionCount('alice')).toBe(2);
      // A crashed host's lease runs out: its session stops counting.
      await sql`update sessions set lease_expires_at_ms = 1 where id = 'a2'`.execute(conn.db);
      expect(await storage.heldSessionCount('alice')).toBe(1);
      // Opened again by a host, it counts again.
      await storage.acquireSession('a3', lease('A'));
      expect(await storage.heldSessionCount('alice')).toBe(2);
    });

    it('reads running and queued turns, the turns of a window and the earliest of them, and a request that has its turn, in one call', async () => {
      await storage.createSession(session('a1', 'alice'));
      await storage.createSession(session('a2', 'alice'));
      await storage.createSession(session('b1', 'bob'));
      await storage.beginTurn({ id: 't1', sessionId: 'a1', clientRequestId: 'r1', startedAtMs: T0, principal: 'alice' }, []);
      await storage.endTurn('t1', completed);
      await storage.beginTurn({ id: 't2', sessionId: 'a1', clientRequestId: 'r2', startedAtMs: T0 + 10_000, principal: 'alice' }, []);
      await storage.enqueueTurn({ id: 't3', sessionId: 'a1', clientRequestId: 'r3', runId: 'run3', trigger: 'message', input: [], queuedAtMs: T0 + 20_000, principal: 'alice' });
      await storage.beginTurn({ id: 't4', sessionId: 'a2', clientRequestId: 'r4', startedAtMs: T0 + 30_000, principal: 'alice' }, []);
      await storage.beginTurn({ id: 'u1', sessionId: 'b1', clientRequestId: 'r1', startedAtMs: T0 + 30_000, principal: 'bob' }, []);

      expect(await storage.turnActivity('alice', T0)).toEqual({ active: 3, recent: 4, oldestRecentMs: T0, known: false });
      expect(await storage.turnActivity('alice', T0 + 15_000, { sessionId: 'a1', clientRequestId: 'r2' })).toEqual({ active: 3, recent: 2, oldestRecentMs: T0 + 20_000, known: true });
      // A request id is the session's: bob's r1 is not alice's.
      expect(await storage.turnActivity('alice', T0 + 40_000, { sessionId: 'a2', clientRequestId: 'r1' })).toEqual({ active: 3, recent: 0, oldestRecentMs: null, known: false });
      expect(await storage.turnActivity('bob', T0)).toEqual({ active: 1, recent: 1, oldestRecentMs: T0 + 30_000, known: false });

      // A queued turn that starts is counted once, at its start.
      await storage.endTurn('t2', completed);
      await storage.beginTurn({ id: 't3', sessionId: 'a1', clientRequestId: 'r3', startedAtMs: T0 + 50_000, fromQueue: true }, []);
      expect(await storage.turnActivity('alice', T0 + 40_000)).toEqual({ active: 2, recent: 1, oldestRecentMs: T0 + 50_000, known: false });
      await storage.endTurn('t3', completed);
      await storage.endTurn('t4', completed);
      expect((await storage.turnActivity('alice', T0)).active).toBe(0);
    });

    it('adds tokens per principal and UTC day', async () => {
      expect(await storage.principalTokens('alice', '2030-01-01')).toBe(0);
      await storage.addPrincipalTokens('alice', '2030-01-01', 120);
      await storage.addPrincipalTokens('alice', '2030-01-01', 3_000_000_000);
      await storage.addPrincipalTokens('alice', '2030-01-02', 7);
      await storage.addPrincipalTokens('bob', '2030-01-01', 5);
      expect(await storage.principalTokens('alice', '2030-01-01')).toBe(3_000_000_120);
      expect(await storage.principalTokens('alice', '2030-01-02')).toBe(7);
      expect(await storage.principalTokens('bob', '2030-01-01')).toBe(5);
    });

    it('claims stream slots up to the limit per principal; released, expired or given up by their host, they free the place', async () => {
      expect(await storage.claimStreamSlot(slot('s1', 'alice'), 2)).toBe(true);
      expect(await storage.claimStreamSlot(slot('s2', 'alice', 'host-B'), 2)).toBe(true);
      expect(await storage.claimStreamSlot(slot('s3', 'alice'), 2)).toBe(false);
      expect(await storage.claimStreamSlot(slot('s4', 'bob'), 2)).toBe(true);

      await storage.releaseStreamSlot('s1');
      expect(await storage.claimStreamSlot(slot('s5', 'alice'), 2)).toBe(true);
      expect(await storage.claimStreamSlot(slot('s6', 'alice'), 2)).toBe(false);

      // Host B crashed: it renews nothing, its slot runs out and no longer counts (and is swept on the next claim).
      await sql`update stream_slots set expires_at_ms = 1 where owner_id = 'host-B'`.execute(conn.db);
      await storage.renewStreamSlots('host-A', 60_000);
      expect(await storage.claimStreamSlot(slot('s7', 'alice'), 2)).toBe(true);
      const left = await sql<{ id: string }>`select id from stream_slots order by id`.execute(conn.db);
      expect(left.rows.map((row) => row.id)).toEqual(['s4', 's5', 's7']);

      // A renewal moves the host's own slots' expiry forward, and no one else's.
      await sql`update stream_slots set expires_at_ms = 1`.execute(conn.db);
      await storage.renewStreamSlots('host-A', 60_000);
      expect(await storage.claimStreamSlot(slot('s8', 'alice'), 2)).toBe(false);

      // A host shutting down gives all of its slots up.
      await storage.releaseStreamSlots('host-A');
      expect(await storage.claimStreamSlot(slot('s9', 'alice'), 1)).toBe(true);
      expect(await storage.claimStreamSlot(slot('s10', 'bob'), 1)).toBe(true);
    });

    it('counts a slot only until it expires (a slot of no lifetime never counts)', async () => {
      expect(await storage.claimStreamSlot(slot('s1', 'alice', 'host-A', 0), 1)).toBe(true);
      expect(await storage.claimStreamSlot(slot('s2', 'alice'), 1)).toBe(true);
      expect(await storage.claimStreamSlot(slot('s3', 'alice'), 1)).toBe(false);
    });

    it('claims of one principal racing each other never pass the limit', async () => {
      const claims = await Promise.all(Array.from({ length: 12 }, (_, i) => storage.claimStreamSlot(slot(`s${i}`, 'alice', `host-${i % 3}`), 4)));
      expect(claims.filter(Boolean)).toHaveLength(4);
    });

    it('writes the turn\'s principal into its row and indexes what the counts read', async () => {
      expect(await indexNames(conn.db, target.dialect, 'turns')).toEqual(expect.arrayContaining(['ix_turns_principal_active', 'ix_turns_principal_started']));
      expect(await indexNames(conn.db, target.dialect, 'sessions')).toEqual(expect.arrayContaining(['ix_sessions_principal_held']));
      await storage.createSession(session('a1', 'alice', { quotaExempt: true }));
      expect(await storage.getSession('a1')).toEqual(session('a1', 'alice', { quotaExempt: true }));
      await storage.beginTurn({ id: 't1', sessionId: 'a1', clientRequestId: 'r1', startedAtMs: T0, principal: 'alice' }, []);
      const rows = await sql<{ principal: string | null }>`select principal from turns where id = 't1'`.execute(conn.db);
      expect(rows.rows).toEqual([{ principal: 'alice' }]);
    });

    it.runIf(target.durable)('keeps every count after closing and reconnecting', async () => {
      await storage.createSession(session('a1', 'alice'), lease('A'));
      await storage.beginTurn({ id: 't1', sessionId: 'a1', clientRequestId: 'r1', startedAtMs: T0, principal: 'alice' }, []);
      await storage.addPrincipalTokens('alice', '2030-01-01', 42);
      await storage.claimStreamSlot(slot('s1', 'alice'), 1);
      await storage.close();

      conn = location.connect();
      storage = conn.storage;
      await storage.migrate();
      expect(await storage.heldSessionCount('alice')).toBe(1);
      expect(await storage.turnActivity('alice', T0)).toMatchObject({ active: 1, recent: 1 });
      expect(await storage.principalTokens('alice', '2030-01-01')).toBe(42);
      expect(await storage.claimStreamSlot(slot('s2', 'alice'), 1)).toBe(false);
    });
  });
}

describeQuotaStorage('SQLite :memory:', sqliteMemoryTarget);
describeQuotaStorage('SQLite file', sqliteFileTarget);

const url = process.env.TEST_DATABASE_URL;
describe.skipIf(!url)('PostgreSQL', () => {
  describeQuotaStorage('PostgreSQL', postgresTarget(url ?? ''));
});
