import { sql, type Kysely } from 'kysely';
import { runRow } from './begin-turn.js';
import { assertFence, insertWhere } from './fencing.js';
import type { Database } from './schema.js';
import { FencedWriteError, type QueuedTurnRow } from './session-storage.js';
import { inTransaction } from './transaction.js';

/** The queued turn's row; its position is given, or computed in the statement. */
function queuedRow<P>(turn: QueuedTurnRow, queuePosition: P) {
  return {
    id: turn.id,
    session_id: turn.sessionId,
    client_request_id: turn.clientRequestId,
    status: 'queued',
    error_code: null,
    error_message: null,
    final_text: null,
    started_at_ms: turn.queuedAtMs,
    finished_at_ms: null,
    input: JSON.stringify(turn.input),
    queue_position: queuePosition,
    principal: turn.principal ?? null,
    trace_parent: turn.traceParent ?? null,
  };
}

const queuedRun = (turn: QueuedTurnRow) => runRow(turn.sessionId, turn.id, { id: turn.runId, trigger: turn.trigger }, turn.queuedAtMs);

/** SQLite (in process, so a transaction costs no round trips): fence check, the next position, turn, run. */
export async function enqueueTurnInTransaction(db: Kysely<Database>, turn: QueuedTurnRow, fence?: number): Promise<void> {
  await inTransaction(db, async (trx) => {
    await assertFence(trx, 'sqlite', turn.sessionId, fence);
    const last = await trx
      .selectFrom('turns')
      .select((eb) => eb.fn.max('queue_position').as('position'))
      .where('session_id', '=', turn.sessionId)
      .executeTakeFirst();
    await trx.insertInto('turns').values(queuedRow(turn, Number(last?.position ?? 0) + 1)).execute();
    await trx.insertInto('runs').values(queuedRun(turn)).execute();
  });
}

/**
 * PostgreSQL: the same as one statement, so one round trip. `fence` share-locks the session row while
 * its token holds; the turn, placed after the session's last position, and its run are written only then.
 */
export async function enqueueTurnInOneStatement(db: Kysely<Database>, turn: QueuedTurnRow, fence?: number): Promise<void> {
  const fenceCte = fence === undefined ? sql`` : sql`fence as (select 1 from sessions where id = ${turn.sessionId} and fencing_token = ${fence} for share), `;
  const held = fence === undefined ? sql`true` : sql`exists (select 1 from fence)`;
  const position = sql`coalesce((select max(queue_position) from turns where session_id = ${turn.sessionId}), 0) + 1`;
  const result = await sql<{ queued: string | number }>`with ${fenceCte}queued as (${insertWhere('turns', queuedRow(turn, position), held)} returning id),
    run as (${insertWhere('runs', queuedRun(turn), sql`exists (select 1 from queued)`)})
    select (select count(*) from queued) as queued`.execute(db);
  if (Number(result.rows[0]?.queued) === 0) throw new FencedWriteError(turn.sessionId);
}
