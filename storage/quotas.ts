import { sql, type Kysely } from 'kysely';
import { databaseNowMs, type DialectName } from './dialect.js';
import type { Database } from './schema.js';
import type { StreamSlot, TurnActivity } from './session-storage.js';
import { inTransaction } from './transaction.js';

/**
 * Issue 25: what the per-principal quotas count, read and written on the database so that every
 * host of a cluster, and a host after a restart, counts the same (migration 009).
 */

/** The first key of the PostgreSQL advisory locks that serialize one principal's stream claims (the second is its hash). */
const STREAM_SLOT_LOCK_CLASS = 7_215;

/** The principal's sessions held under a live lease, through the partial index of held sessions. */
export async function heldSessionCount(db: Kysely<Database>, dialect: DialectName, principal: string): Promise<number> {
  const row = await db
    .selectFrom('sessions')
    .select((eb) => eb.fn.countAll().as('held'))
    .where('principal', '=', principal)
    .where('owner_id', 'is not', null)
    .where(sql<boolean>`lease_expires_at_ms > ${databaseNowMs(dialect)}`)
    .executeTakeFirst();
  return Number(row?.held ?? 0);
}

/**
 * One statement for the hot path of a turn request: the principal's active turns (the partial index
 * holds only running and queued ones), its turns of the window (a range of `(principal,
 * started_at_ms)`), and whether the request has its turn already (the unique request index).
 */
export async function turnActivity(
  db: Kysely<Database>,
  principal: string,
  sinceMs: number,
  request?: { sessionId: string; clientRequestId: string },
): Promise<TurnActivity> {
  const known = request
    ? sql<number | boolean>`exists (select 1 from turns where session_id = ${request.sessionId} and client_request_id = ${request.clientRequestId})`
    : sql<number>`0`;
  const { rows } = await sql<{ active: number | string; recent: number | string; oldest: number | string | null; known: number | boolean }>`
    select a.active, r.recent, r.oldest, ${known} as known
    from (select count(*) as active from turns where principal = ${principal} and status in ('running', 'queued')) a
    cross join (select count(*) as recent, min(started_at_ms) as oldest from turns where principal = ${principal} and started_at_ms >= ${sinceMs}) r`.execute(db);
  const row = rows[0];
  return {
    active: Number(row?.active ?? 0),
    recent: Number(row?.recent ?? 0),
    oldestRecentMs: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
    known: row?.known === true || Number(row?.known) === 1,
  };
}

export async function addPrincipalTokens(db: Kysely<Database>, principal: string, day: string, tokens: number): Promise<void> {
  await db
    .insertInto('principal_usage')
    .values({ principal, day, tokens })
    .onConflict((oc) => oc.columns(['principal', 'day']).doUpdateSet({ tokens: sql<number>`principal_usage.tokens + excluded.tokens` }))
    .execute();
}

export async function principalTokens(db: Kysely<Database>, principal: string, day: string): Promise<number> {
  const row = await db.selectFrom('principal_usage').select('tokens').where('principal', '=', principal).where('day', '=', day).executeTakeFirst();
  return Number(row?.tokens ?? 0);
}

/**
 * Count and insert in one transaction. SQLite writes one transaction at a time (the delete takes the
 * write lock first); on PostgreSQL two claims of one principal would each count before the other
 * inserts, so they are serialized by an advisory lock of the principal's, held until the commit.
 */
export async function claimStreamSlot(db: Kysely<Database>, dialect: DialectName, slot: StreamSlot, max: number): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(${STREAM_SLOT_LOCK_CLASS}, hashtext(${slot.principal}))`.execute(trx);
    const now = databaseNowMs(dialect);
    await trx.deleteFrom('stream_slots').where('principal', '=', slot.principal).where(sql<boolean>`expires_at_ms <= ${now}`).execute();
    const row = await trx
      .selectFrom('stream_slots')
      .select((eb) => eb.fn.countAll().as('live'))
      .where('principal', '=', slot.principal)
      .where(sql<boolean>`expires_at_ms > ${now}`)
      .executeTakeFirst();
    if (Number(row?.live ?? 0) >= max) return false;
    await trx
      .insertInto('stream_slots')
      .values({ id: slot.id, principal: slot.principal, owner_id: slot.ownerId, expires_at_ms: sql<number>`${now} + ${slot.ttlMs}` })
      .execute();
    return true;
  });
}

export async function releaseStreamSlot(db: Kysely<Database>, slotId: string): Promise<void> {
  await db.deleteFrom('stream_slots').where('id', '=', slotId).execute();
}

export async function renewStreamSlots(db: Kysely<Database>, dialect: DialectName, ownerId: string, ttlMs: number): Promise<void> {
  await db
    .updateTable('stream_slots')
    .set({ expires_at_ms: sql<number>`${databaseNowMs(dialect)} + ${ttlMs}` })
    .where('owner_id', '=', ownerId)
    .execute();
}

export async function releaseStreamSlots(db: Kysely<Database>, ownerId: string): Promise<void> {
  await db.deleteFrom('stream_slots').where('owner_id', '=', ownerId).execute();
}
