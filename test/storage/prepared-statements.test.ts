import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { KyselySessionStorage } from '../../storage/kysely-storage.js';
import { postgresDatabase } from '../../storage/postgres.js';
import type { SessionStorage } from '../../storage/session-storage.js';
import { POSTGRES_URL, dropPostgresSchema } from '../support/databases.js';

const T0 = 1_700_000_000_000;
const owner = { ownerId: 'A', host: 'test-host', pid: 1, ttlMs: 60_000 };

/** A session with a turn and some messages, written the way a runtime writes them (fenced). */
async function writeTurn(storage: SessionStorage, sessionId: string, messages: number): Promise<void> {
  const fence = await storage.createSession(
    { id: sessionId, agent: 'default', permissionMode: 'auto', workspaceDir: null, createdAtMs: T0, busyPolicy: 'reject', updateSequence: 0 },
    owner,
  );
  const turnId = `${sessionId}-t`;
  await storage.beginTurn({ id: turnId, sessionId, clientRequestId: 'c', startedAtMs: T0 }, [], fence);
  for (let sequence = 1; sequence <= messages; sequence++) {
    await storage.appendMessage({ id: `${turnId}-${sequence}`, sessionId, turnId, sequence, createdAtMs: T0, message: { role: 'user', kind: 'normal', text: `m${sequence}` } }, fence);
  }
  await storage.writeSpans([{ type: 'start', span: { id: `${turnId}-span`, sessionId, turnId, kind: 'turn', name: 'turn', source: 'system', status: 'running', errorCode: null, startedAtMs: T0, endedAtMs: null } }]);
  await storage.writeSpans([{ type: 'end', spanId: `${turnId}-span`, end: { status: 'succeeded', errorCode: null, endedAtMs: T0 + 1 } }]);
  await storage.endTurn(turnId, { status: 'completed', errorCode: null, errorMessage: null, finalText: 'done', finishedAtMs: T0 + 1 }, fence);
}

describe.skipIf(!POSTGRES_URL)('PostgreSQL: the per-step statements are kept prepared', () => {
  const schemas: string[] = [];
  afterEach(async () => {
    for (const schema of schemas.splice(0)) await dropPostgresSchema(POSTGRES_URL!, schema);
  });

  async function open(prepareStatements?: boolean) {
    const schema = `tc_prep_${Math.random().toString(36).slice(2)}`;
    schemas.push(schema);
    const db = postgresDatabase({ connectionString: POSTGRES_URL!, schema, ...(prepareStatements === undefined ? {} : { prepareStatements }) });
    const storage = new KyselySessionStorage(db, { dialect: 'postgres', schema, advisoryLock: true });
    await storage.migrate();
    // Run one after another, the statements share the pool's one idle connection, which this view describes.
    const prepared = async () =>
      (await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'turnchart_%'`.execute(db)).rows.map((r) => r.statement);
    return { storage, prepared };
  }

  it('names the message insert, the turn\'s begin and end, the session insert and the span batch, each prepared once per connection', async () => {
    const { storage, prepared } = await open();
    await writeTurn(storage, 's1', 3);
    await writeTurn(storage, 's2', 5);
    const statements = await prepared();
    const count = (pattern: RegExp) => statements.filter((s) => pattern.test(s)).length;
    expect(count(/^insert into "sessions"/)).toBe(1);
    expect(count(/^with fence as .*began as/s)).toBe(1);
    expect(count(/^insert into "messages"/)).toBe(1);
    expect(count(/^update "turns"/)).toBe(1);
    // Span batches of different sizes and kinds share their text: one for starts, one for ends.
    expect(count(/^with started as/)).toBe(1);
    expect(count(/^with ends/)).toBe(1);
    expect((await storage.listMessages('s2')).map((m) => m.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(await storage.listSpans('s2')).toMatchObject([{ status: 'succeeded', endedAtMs: T0 + 1 }]);
    await storage.close();
  });

  it('prepares nothing when told not to, with the same results', async () => {
    const { storage, prepared } = await open(false);
    await writeTurn(storage, 's1', 2);
    expect(await prepared()).toEqual([]);
    expect(await storage.getTurn('s1-t')).toMatchObject({ status: 'completed', finalText: 'done' });
    await storage.close();
  });
});
