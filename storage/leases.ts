import { sql, type Kysely } from 'kysely';
import { databaseNowMs, type DialectName } from './dialect.js';
import { rowToSession } from './rows.js';
import { waitsForHuman } from './approvals.js';
import { inTransaction } from './transaction.js';
import { toMs, type Database } from './schema.js';
import type { AcquireResult, CorrectionReport, LeaseRequest, SessionStanding } from './session-storage.js';
import type { LeaseHolder, OwnerIdentity } from '../src/protocol/session-owner.js';

/**
 * One owner per session: a lease (owner, expiry on the database's clock) and a fencing token raised
 * whenever the session changes hands. What a departed owner left running is corrected by whoever
 * takes the session next, exactly as a restart corrects it (RT-24).
 */

const RESTART = 'process_restart';

/** A lease nobody holds any more: none was taken, it was released, or it ran out. */
function unheld(dialect: DialectName) {
  return sql<boolean>`(sessions.owner_id is null or sessions.lease_expires_at_ms <= ${databaseNowMs(dialect)})`;
}

export async function acquireSession(
  db: Kysely<Database>,
  dialect: DialectName,
  sessionId: string,
  lease: LeaseRequest,
  reserveSequences: number,
): Promise<AcquireResult> {
  return inTransaction(db, async (trx) => {
    let query = trx.selectFrom('sessions').selectAll().select(databaseNowMs(dialect).as('now_ms')).where('id', '=', sessionId);
    if (dialect === 'postgres') query = query.forUpdate();
    const row = await query.executeTakeFirst();
    if (!row) return { ok: false, reason: 'unknown' };
    const nowMs = Number(row.now_ms);
    const expiresAtMs = toMs(row.lease_expires_at_ms);
    const live = row.owner_id !== null && expiresAtMs !== null && expiresAtMs > nowMs;
    if (live && row.owner_id !== lease.ownerId) {
      return { ok: false, reason: 'owned', holder: { ownerId: row.owner_id!, host: row.owner_host ?? '', pid: row.owner_pid ?? 0, expiresAtMs: expiresAtMs!, remainingMs: expiresAtMs! - nowMs } };
    }
    const claimed = await trx
      .updateTable('sessions')
      .set(() => ({
        owner_id: lease.ownerId,
        owner_host: lease.host,
        owner_pid: lease.pid,
        lease_expires_at_ms: nowMs + lease.ttlMs,
        fencing_token: sql<number>`fencing_token + 1`,
        update_sequence: sql<number>`update_sequence + ${reserveSequences}`,
      }))
      .where('id', '=', sessionId)
      .returning('fencing_token')
      .executeTakeFirstOrThrow();
    const corrected =
      row.owner_id === lease.ownerId ? { interruptedTurns: 0, unknownSpans: 0 } : await correctSession(trx, sessionId, nowMs, Number(row.resume_turns) === 1);
    const tookOver = row.owner_id !== null && row.owner_id !== lease.ownerId;
    return { ok: true, session: rowToSession(row), fence: Number(claimed.fencing_token), corrected, tookOver };
  });
}

/**
 * What a departed owner left running in one session becomes `interrupted` / `outcome_unknown`; a
 * session that resumes its turns (issue 26) keeps its running turn for the opener to go on with.
 */
async function correctSession(db: Kysely<Database>, sessionId: string, nowMs: number, resumes: boolean): Promise<CorrectionReport> {
  const spans = await db
    .updateTable('trace_spans')
    .set({ status: 'outcome_unknown', error_code: RESTART, ended_at_ms: nowMs })
    .where('session_id', '=', sessionId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  if (resumes) return { interruptedTurns: 0, unknownSpans: Number(spans.numUpdatedRows) };
  const turns = await db
    .updateTable('turns')
    .set({ status: 'interrupted', error_code: RESTART, finished_at_ms: nowMs })
    .where('session_id', '=', sessionId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return { interruptedTurns: Number(turns.numUpdatedRows), unknownSpans: Number(spans.numUpdatedRows) };
}

/** RT-24 for every session nobody holds: the startup correction, in one transaction. */
export async function correctUnheld(db: Kysely<Database>, dialect: DialectName, nowMs: number): Promise<CorrectionReport> {
  return inTransaction(db, async (trx) => {
    const unheldIds = trx.selectFrom('sessions').select('id').where(unheld(dialect));
    const withRunningTurn = unheldIds.where((eb) =>
      eb.exists(eb.selectFrom('turns').select('turns.id').whereRef('turns.session_id', '=', 'sessions.id').where('turns.status', '=', 'running')),
    );
    // Locked in id order first (PostgreSQL), like a renewal: two hosts over the same rows wait, never deadlock.
    if (dialect === 'postgres') await withRunningTurn.orderBy('id').forUpdate().execute();
    // The last owner may only have stalled past its lease: a new token makes sure it writes nothing more.
    await trx
      .updateTable('sessions')
      .set({ fencing_token: sql<number>`fencing_token + 1`, owner_id: null, owner_host: null, owner_pid: null, lease_expires_at_ms: null })
      .where(unheld(dialect))
      .where('id', 'in', withRunningTurn)
      .execute();
    const spans = await trx
      .updateTable('trace_spans')
      .set({ status: 'outcome_unknown', error_code: RESTART, ended_at_ms: nowMs })
      .where('status', '=', 'running')
      .where('session_id', 'in', unheldIds)
      .executeTakeFirst();
    const turns = await trx
      .updateTable('turns')
      .set({ status: 'interrupted', error_code: RESTART, finished_at_ms: nowMs })
      .where('status', '=', 'running')
      // Issue 26: a session that resumes its turns keeps its running one for whoever opens it next.
      .where('session_id', 'in', unheldIds.where('resume_turns', '=', 0))
      .executeTakeFirst();
    return { interruptedTurns: Number(turns.numUpdatedRows), unknownSpans: Number(spans.numUpdatedRows) };
  });
}

const RENEW_CHUNK = 500;

export async function renewLeases(db: Kysely<Database>, dialect: DialectName, lease: LeaseRequest, sessionIds: string[]): Promise<string[]> {
  const renewed: string[] = [];
  for (let i = 0; i < sessionIds.length; i += RENEW_CHUNK) {
    const chunk = sessionIds.slice(i, i + RENEW_CHUNK);
    // PostgreSQL locks the rows in id order, as every statement here that locks several sessions does: a
    // renewal meeting another host's renewal or correction over the same rows (a stale holder) waits instead
    // of deadlocking, which cost the lease itself when the renewal was the one aborted.
    const ids =
      dialect === 'postgres' ? db.selectFrom('sessions').select('id').where('id', 'in', chunk).where('owner_id', '=', lease.ownerId).orderBy('id').forUpdate() : chunk;
    const rows = await db
      .updateTable('sessions')
      .set({ lease_expires_at_ms: sql<number>`${databaseNowMs(dialect)} + ${lease.ttlMs}` })
      .where('owner_id', '=', lease.ownerId)
      .where('id', 'in', ids)
      .returning('id')
      .execute();
    renewed.push(...rows.map((r) => r.id));
  }
  return renewed;
}

export async function releaseSession(db: Kysely<Database>, sessionId: string, ownerId: string, lastUpdateSequence: number): Promise<void> {
  await db
    .updateTable('sessions')
    .set({
      owner_id: null,
      owner_host: null,
      owner_pid: null,
      lease_expires_at_ms: null,
      // Exactly what was issued, not the block reserved: every number this owner issued is at most this, and
      // the owner before it issued only numbers below where this one started. The next owner continues from here.
      update_sequence: lastUpdateSequence,
    })
    .where('id', '=', sessionId)
    .where('owner_id', '=', ownerId)
    .execute();
}

export async function liveOwnersOn(db: Kysely<Database>, dialect: DialectName, host: string): Promise<OwnerIdentity[]> {
  const rows = await db
    .selectFrom('sessions')
    .select(['owner_id', 'owner_pid'])
    .distinct()
    .where('owner_host', '=', host)
    .where('owner_id', 'is not', null)
    .where(sql<boolean>`lease_expires_at_ms > ${databaseNowMs(dialect)}`)
    .execute();
  return rows.map((r) => ({ ownerId: r.owner_id!, host, pid: r.owner_pid ?? 0 }));
}

/** A plain read (no lock, nothing written): a cluster host routes by it without contending with the owner's writes. */
export async function leaseHolder(db: Kysely<Database>, dialect: DialectName, sessionId: string): Promise<LeaseHolder | null> {
  return (await sessionStanding(db, dialect, sessionId))?.holder ?? null;
}

/** Who owns the session and who holds its live lease, in one read; null when there is no such session. */
export async function sessionStanding(db: Kysely<Database>, dialect: DialectName, sessionId: string): Promise<SessionStanding | null> {
  const row = await db
    .selectFrom('sessions')
    .select(['principal', 'owner_id', 'owner_host', 'owner_pid', 'lease_expires_at_ms'])
    .select(databaseNowMs(dialect).as('now_ms'))
    .where('id', '=', sessionId)
    .executeTakeFirst();
  if (!row) return null;
  const expiresAtMs = toMs(row.lease_expires_at_ms ?? null);
  const live = row.owner_id && expiresAtMs !== null && expiresAtMs > Number(row.now_ms);
  return {
    principal: row.principal ?? null,
    holder: live ? { ownerId: row.owner_id!, host: row.owner_host ?? '', pid: row.owner_pid ?? 0, expiresAtMs: expiresAtMs!, remainingMs: expiresAtMs! - Number(row.now_ms) } : null,
  };
}

export async function expireOwner(db: Kysely<Database>, ownerId: string): Promise<void> {
  await db.updateTable('sessions').set({ lease_expires_at_ms: 0 }).where('owner_id', '=', ownerId).execute();
}

export async function unheldSessionsWithWork(db: Kysely<Database>, dialect: DialectName): Promise<string[]> {
  const rows = await db
    .selectFrom('sessions')
    .select('id')
    .where(unheld(dialect))
    .where((eb) =>
      eb.or([
        eb.exists(eb.selectFrom('turns').select('turns.id').whereRef('turns.session_id', '=', 'sessions.id').where('turns.status', '=', 'queued')),
        // Issue 26: a turn to resume, unless all it waits for is a human's answer.
        eb.and([
          eb('sessions.resume_turns', '=', 1),
          eb.exists(eb.selectFrom('turns').select('turns.id').whereRef('turns.session_id', '=', 'sessions.id').where('turns.status', '=', 'running')),
          eb.not(waitsForHuman(dialect)),
        ]),
      ]),
    )
    .execute();
  return rows.map((r) => r.id);
}
