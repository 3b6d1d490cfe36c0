import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { KyselySessionStorage } from '../../storage/kysely-storage.js';
import { postgresDatabase } from '../../storage/postgres.js';
import { FencedWriteError } from '../../storage/session-storage.js';
import type { StoredMessage } from '../../src/protocol/messages.js';
import { POSTGRES_URL, dropPostgresSchema } from '../support/databases.js';

const T0 = 1_700_000_000_000;
const owner = { ownerId: 'A', host: 'test-host', pid: 1, ttlMs: 60_000 };
const SESSIONS = 40;

const message = (sessionId: string, sequence: number, text = `m${sequence}`, id = `${sessionId}-m${sequence}`): StoredMessage => ({
  id,
  sessionId,
  turnId: `${sessionId}-t`,
  sequence,
  createdAtMs: T0,
  message: { role: 'user', kind: 'normal', text },
});

describe.skipIf(!POSTGRES_URL)('PostgreSQL group commit of message writes and turn ends (issue 28)', () => {
  const schemas: string[] = [];
  afterEach(async () => {
    for (const schema of schemas.splice(0)) await dropPostgresSchema(POSTGRES_URL!, schema);
  });

  /** A migrated schema with `SESSIONS` sessions, each in a turn: their fences by id. */
  async function open(groupCommit?: boolean) {
    const schema = `tc_group_${Math.random().toString(36).slice(2)}`;
    schemas.push(schema);
    const db = postgresDatabase({ connectionString: POSTGRES_URL!, schema });
    const storage = new KyselySessionStorage(db, { dialect: 'postgres', schema, advisoryLock: true, ...(groupCommit === undefined ? {} : { groupCommit }) });
    await storage.migrate();
    const fences = new Map<string, number>();
    for (let i = 0; i < SESSIONS; i++) {
      const id = `s${String(i).padStart(2, '0')}`;
      const fence = await storage.createSession({ id, agent: 'default', permissionMode: 'auto', workspaceDir: null, createdAtMs: T0, busyPolicy: 'reject', updateSequence: 0 }, owner);
      await storage.beginTurn({ id: `${id}-t`, sessionId: id, clientRequestId: 'c', startedAtMs: T0 }, [], fence);
      fences.set(id, fence);
    }
    return { db, storage, fences, close: () => storage.close() };
  }

  it('writes of many sessions in one loop turn share statements, and each is durable when its promise settles', async () => {
    const { db, storage, fences, close } = await open();
    try {
      const before = { ...storage.groupCommits!.messages.counts };
      const writes = [...fences].map(([id, fence]) => storage.appendMessage(message(id, 1), fence).then(async () => (await storage.listMessages(id)).length));
      // Each write, once settled, reads back: it was committed before its caller went on.
      expect(await Promise.all(writes)).toEqual(Array(SESSIONS).fill(1));
      const counts = storage.groupCommits!.messages.counts;
      expect(counts.statements - before.statements).toBeLessThan(SESSIONS / 4);
      expect(counts.batchedWrites - before.batchedWrites).toBeGreaterThan(SESSIONS / 2);
      expect(counts.fallbacks).toBe(0);
      const stored = await sql<{ n: string }>`select count(*) as n from messages`.execute(db);
      expect(Number(stored.rows[0]!.n)).toBe(SESSIONS);
    } finally {
      await close();
    }
  });

  it('a session whose fence moved on is refused in the batch; the others land, and a row already there is taken as written', async () => {
    const { db, storage, fences, close } = await open();
    try {
      // Half the sessions are taken over by another owner: their token moves on.
      const taken = [...fences.keys()].filter((_, i) => i % 2 === 0);
      await sql`update sessions set fencing_token = fencing_token + 1 where id in (${sql.join(taken)})`.execute(db);
      // One message is written beforehand: written again (the same id), it must not fail.
      const kept = [...fences.keys()][1]!;
      await storage.appendMessage(message(kept, 1), fences.get(kept)!);
      const outcomes = await Promise.allSettled([...fences].map(([id, fence]) => storage.appendMessage(message(id, 1), fence)));
      const refused = [...fences.keys()].filter((_, i) => outcomes[i]!.status === 'rejected');
      expect(refused).toEqual(taken);
      for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(FencedWriteError);
      expect(storage.groupCommits!.messages.counts.batchedWrites).toBeGreaterThan(0);
      for (const id of fences.keys()) expect((await storage.listMessages(id)).length).toBe(taken.includes(id) ? 0 : 1);
    } finally {
      await close();
    }
  });

  it('a batch the server refuses as a whole is written row by row: only the write on a taken sequence fails', async () => {
    const { storage, fences, close } = await open();
    try {
      const [first, second] = [...fences.keys()];
      await storage.appendMessage(message(first!, 1), fences.get(first!)!);
      const outcomes = await Promise.allSettled([
        // Another message on a sequence already taken: a unique violation that fails the batch's statement.
        storage.appendMessage(message(first!, 1, 'other', `${first}-other`), fences.get(first!)!),
        ...[...fences].slice(1).map(([id, fence]) => storage.appendMessage(message(id, 1), fence)),
      ]);
      expect(outcomes[0]!.status).toBe('rejected');
      expect(outcomes.slice(1).every((o) => o.status === 'fulfilled')).toBe(true);
      expect(storage.groupCommits!.messages.counts.fallbacks).toBeGreaterThan(0);
      expect((await storage.listMessages(first!)).map((m) => m.message.role === 'user' && m.message.text)).toEqual(['m1']);
      expect((await storage.listMessages(second!)).length).toBe(1);
    } finally {
      await close();
    }
  });

  it('keeps tool results with their audit columns, in each session\'s order', async () => {
    const { storage, fences, close } = await open();
    try {
      const audit = { toolCallId: 'call_1', toolName: 'read_file', status: 'succeeded', argumentsHash: 'h', dispatchedArgumentsHash: 'h', verdict: 'allowed', decidedBy: 'mode', errorCode: null, permissionWaitMs: 3, executionMs: 12, principal: 'alice' } as const;
      await Promise.all(
        [...fences].flatMap(([id, fence]) => [
          storage.appendMessage(message(id, 1), fence),
          storage.appendMessage({ ...message(id, 2), id: `${id}-r`, message: { role: 'tool', toolCallId: 'call_1', toolName: 'read_file', status: 'succeeded', content: 'ok' } }, fence, audit),
        ]),
      );
      const [id] = fences.keys();
      expect((await storage.listMessages(id!)).map((m) => m.sequence)).toEqual([1, 2]);
      expect(await storage.listAudit(id!, { limit: 10 })).toMatchObject([{ toolCallId: 'call_1', toolName: 'read_file', verdict: 'allowed', permissionWaitMs: 3, executionMs: 12, principal: 'alice' }]);
    } finally {
      await close();
    }
  });

  it('ends the turns of many sessions in shared statements; a moved fence and a turn no longer running are refused', async () => {
    const { db, storage, fences, close } = await open();
    try {
      const ids = [...fences.keys()];
      const [taken, ended] = [ids[0]!, ids[1]!];
      await sql`update sessions set fencing_token = fencing_token + 1 where id = ${taken}`.execute(db);
      const end = (finalText: string) => ({ status: 'completed' as const, errorCode: null, errorMessage: null, finalText, finishedAtMs: T0 + 5 });
      await storage.endTurn(`${ended}-t`, end('first'), fences.get(ended)!);
      const before = { ...storage.groupCommits!.turnEnds.counts };
      const outcomes = await Promise.allSettled(ids.map((id) => storage.endTurn(`${id}-t`, end(`done ${id}`), fences.get(id)!)));
      expect(outcomes[0]).toMatchObject({ status: 'rejected', reason: expect.any(FencedWriteError) });
      expect(outcomes[1]).toMatchObject({ status: 'rejected', reason: { message: `endTurn: no running turn ${ended}-t` } });
      expect(outcomes.slice(2).every((o) => o.status === 'fulfilled')).toBe(true);
      const counts = storage.groupCommits!.turnEnds.counts;
      expect(counts.fallbacks - before.fallbacks).toBe(0);
      expect(counts.statements - before.statements).toBeLessThan(ids.length / 4);
      expect(counts.batchedWrites - before.batchedWrites).toBeGreaterThan(ids.length / 2);
      expect(await storage.getTurn(`${ids[2]}-t`)).toMatchObject({ status: 'completed', finalText: `done ${ids[2]}`, finishedAtMs: T0 + 5 });
      expect(await storage.getTurn(`${ended}-t`)).toMatchObject({ status: 'completed', finalText: 'first' });
      expect(await storage.getTurn(`${taken}-t`)).toMatchObject({ status: 'running' });
    } finally {
      await close();
    }
  });

  it('begins the turns of many sessions in shared statements, with their runs and first messages; a moved fence is refused', async () => {
    const { db, storage, fences, close } = await open();
    try {
      const ids = [...fences.keys()];
      // Each session's first turn ends: a session runs one turn at a time.
      await sql`update turns set status = 'completed', finished_at_ms = ${T0 + 5}`.execute(db);
      await sql`update sessions set fencing_token = fencing_token + 1 where id = ${ids[0]!}`.execute(db);
      const before = { ...storage.groupCommits!.turnBegins.counts };
      const outcomes = await Promise.allSettled(
        ids.map((id) =>
          storage.beginTurn(
            { id: `${id}-t2`, sessionId: id, clientRequestId: 'c2', startedAtMs: T0 + 10, run: { id: `${id}-run2`, trigger: 'message' }, principal: 'alice' },
            [{ ...message(id, 7, 'second turn'), turnId: `${id}-t2` }, { ...message(id, 8, 'and more'), turnId: `${id}-t2` }],
            fences.get(id)!,
          ),
        ),
      );
      expect(outcomes[0]).toMatchObject({ status: 'rejected', reason: expect.any(FencedWriteError) });
      expect(outcomes.slice(1).every((o) => o.status === 'fulfilled')).toBe(true);
      const counts = storage.groupCommits!.turnBegins.counts;
      expect(counts.fallbacks - before.fallbacks).toBe(0);
      expect(counts.statements - before.statements).toBeLessThan(ids.length / 4);
      expect(counts.batchedWrites - before.batchedWrites).toBeGreaterThan(ids.length / 2);
      expect(await storage.getTurn(`${ids[3]}-t2`)).toMatchObject({ status: 'running', runId: `${ids[3]}-run2`, trigger: 'message', startedAtMs: T0 + 10 });
      expect((await storage.listMessages(ids[3]!)).map((m) => [m.turnId, m.sequence])).toEqual([[`${ids[3]}-t2`, 7], [`${ids[3]}-t2`, 8]]);
      expect(await storage.getTurn(`${ids[0]}-t2`)).toBeUndefined();
      expect(await storage.listMessages(ids[0]!)).toEqual([]);
    } finally {
      await close();
    }
  });

  it('groupCommit: false writes each message alone', async () => {
    const { storage, fences, close } = await open(false);
    try {
      expect(storage.groupCommits).toBeNull();
      await Promise.all([...fences].map(([id, fence]) => storage.appendMessage(message(id, 1), fence)));
      for (const id of fences.keys()) expect((await storage.listMessages(id)).length).toBe(1);
    } finally {
      await close();
    }
  });
});
