import { sql, type Kysely, type QueryResult, type RawBuilder } from 'kysely';
import type { StoredMessage } from '../src/protocol/messages.js';
import { fenceCheck, insertWhere } from './fencing.js';
import { messageToRow, messageValues } from './rows.js';
import type { Database } from './schema.js';
import { FencedWriteError, type TurnStart } from './session-storage.js';
import { runInTransaction, type PlannedStatement } from './transaction.js';
import { executeKept } from './prepared-statements.js';
import { KeptStatement } from './kept-statement.js';

export function turnRow(turn: TurnStart) {
  return {
    id: turn.id,
    session_id: turn.sessionId,
    client_request_id: turn.clientRequestId,
    status: 'running',
    error_code: null,
    error_message: null,
    final_text: null,
    started_at_ms: turn.startedAtMs,
    finished_at_ms: null,
    principal: turn.principal ?? null,
    trace_parent: turn.traceParent ?? null,
  };
}

export function runRow(sessionId: string, turnId: string, run: { id: string; trigger: string }, createdAtMs: number) {
  return { id: run.id, session_id: sessionId, turn_id: turnId, trigger_type: run.trigger, created_at_ms: createdAtMs };
}

function notQueued(turn: TurnStart): Error {
  return new Error(`beginTurn: turn ${turn.id} is not queued`);
}

/** The statements of beginning a turn on SQLite, each built once and then run with the values listed (kept-statement.ts). */
const turnInsert = new KeptStatement<TurnStart>(
  (db, _dialect, turn) => db.insertInto('turns').values(turnRow(turn)).compile(),
  (turn) => [turn.id, turn.sessionId, turn.clientRequestId, 'running', null, null, null, turn.startedAtMs, null, turn.principal ?? null, turn.traceParent ?? null],
);
const runInsert = new KeptStatement<{ turn: TurnStart; run: { id: string; trigger: string } }>(
  (db, _dialect, { turn, run }) => db.insertInto('runs').values(runRow(turn.sessionId, turn.id, run, turn.startedAtMs)).compile(),
  ({ turn, run }) => [run.id, turn.sessionId, turn.id, run.trigger, turn.startedAtMs],
);
const messageInsert = new KeptStatement<StoredMessage>(
  (db, _dialect, message) => db.insertInto('messages').values(messageToRow(message)).compile(),
  messageValues,
);
const queuedStart = new KeptStatement<TurnStart>(
  (db, _dialect, turn) =>
    db
      .updateTable('turns')
      .set({ status: 'running', started_at_ms: turn.startedAtMs, input: null, queue_position: null })
      .where('id', '=', turn.id)
      .where('status', '=', 'queued')
      .compile(),
  (turn) => ['running', turn.startedAtMs, null, null, turn.id, 'queued'],
);

/** SQLite (in process, so a transaction costs no round trips): fence check, turn, run, messages. */
export async function beginTurnInTransaction(db: Kysely<Database>, turn: TurnStart, messages: StoredMessage[], fence?: number): Promise<void> {
  const statements: PlannedStatement[] = [];
  if (fence !== undefined) statements.push(fenceCheck(db, 'sqlite', turn.sessionId, fence));
  if (turn.fromQueue) {
    const check = (result: QueryResult<unknown>) => {
      if (!result.numAffectedRows) throw notQueued(turn);
    };
    statements.push({ query: queuedStart.compile(db, 'sqlite', turn), check });
  } else {
    statements.push({ query: turnInsert.compile(db, 'sqlite', turn) });
    if (turn.run) statements.push({ query: runInsert.compile(db, 'sqlite', { turn, run: turn.run }) });
  }
  for (const message of messages) statements.push({ query: messageInsert.compile(db, 'sqlite', message) });
  await runInTransaction(db, statements);
}

/**
 * PostgreSQL: the same writes as one statement, so one round trip and one commit. `fence` share-locks
 * the session row while its token holds (as `assertFence` does in a transaction); `began` is the turn
 * inserted, or the queued one moved to running, only when it does; the run and every message are
 * written only when `began` has a row. One statement is atomic: a failing insert (a taken sequence, an
 * unknown session) leaves nothing. The two counts tell a stale token from a turn that was not queued.
 */
export async function beginTurnInOneStatement(db: Kysely<Database>, turn: TurnStart, messages: StoredMessage[], fence?: number): Promise<void> {
  const held = fence === undefined ? sql`true` : sql`exists (select 1 from fence)`;
  const parts: RawBuilder<unknown>[] = [];
  if (fence !== undefined) parts.push(sql`fence as (select 1 from sessions where id = ${turn.sessionId} and fencing_token = ${fence} for share)`);
  parts.push(sql`began as (${turn.fromQueue ? startQueued(turn, held) : insertWhere('turns', turnRow(turn), held)} returning id)`);
  const began = sql`exists (select 1 from began)`;
  if (turn.run && !turn.fromQueue) parts.push(sql`run as (${insertWhere('runs', runRow(turn.sessionId, turn.id, turn.run, turn.startedAtMs), began)})`);
  // One insert per message: `insert … select <parameters>` takes each parameter's type from its column.
  for (const [i, message] of messages.entries()) parts.push(sql`${sql.id(`message_${i}`)} as (${insertWhere('messages', messageToRow(message), began)})`);
  const fenced = fence === undefined ? sql`1` : sql`(select count(*) from fence)`;
  const statement = sql<{ held: string | number; began: string | number }>`with ${sql.join(parts)}
    select ${fenced} as held, (select count(*) from began) as began`;
  const result = await executeKept(db, 'postgres', statement.compile(db));
  const counts = result.rows[0];
  if (Number(counts?.held) === 0) throw new FencedWriteError(turn.sessionId);
  if (Number(counts?.began) === 0) throw notQueued(turn);
}

function startQueued(turn: TurnStart, held: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`update turns set status = 'running', started_at_ms = ${turn.startedAtMs}, input = null, queue_position = null
    where id = ${turn.id} and status = 'queued' and ${held}`;
}
