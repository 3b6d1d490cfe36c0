import { sql, type Kysely } from 'kysely';
import type { StoredMessage } from '../src/protocol/messages.js';
import { turnRow } from './begin-turn.js';
import { executeKept } from './prepared-statements.js';
import { GroupCommit, heldSessions, unnestRows } from './group-commit.js';
import { messageToRow, messageValues } from './rows.js';
import type { Database } from './schema.js';
import type { TurnStart } from './session-storage.js';

/**
 * The fenced begins of new turns grouped on PostgreSQL (group-commit.ts): the turns, their runs and
 * their first messages (skill snapshots, the user's text) of every session whose fence holds, in one
 * statement. A turn moved from the queue is begun alone (begin-turn.ts): its row exists already.
 */

export interface TurnBeginWrite {
  turn: TurnStart;
  messages: StoredMessage[];
  fence: number;
}

export function turnBeginGroupCommit(
  db: Kysely<Database>,
  one: (write: TurnBeginWrite) => Promise<void>,
  notApplied: (write: TurnBeginWrite) => Promise<void>,
): GroupCommit<TurnBeginWrite> {
  return new GroupCommit<TurnBeginWrite>({
    one,
    notApplied,
    key: (write) => write.turn.id,
    many: async (batch) => new Set((await executeKept(db, 'postgres', batchBegin(batch).compile(db))).rows.map((row) => row.id)),
  });
}

const SAMPLE: TurnStart = { id: '', sessionId: '', clientRequestId: '', startedAtMs: 0 };
const SAMPLE_MESSAGE: StoredMessage = { id: '', sessionId: '', turnId: '', sequence: 0, createdAtMs: 0, message: { role: 'user', kind: 'normal', text: '' } };
/** The turn row's columns (`turnRow`'s keys), then the run's and the fence. */
const TURN_COLUMNS: readonly string[] = Object.keys(turnRow(SAMPLE));
const MESSAGE_COLUMNS: readonly string[] = Object.keys(messageToRow(SAMPLE_MESSAGE));

function batchBegin(batch: readonly TurnBeginWrite[]) {
  const turns = batch.map(({ turn, fence }) => [...Object.values(turnRow(turn)), turn.run?.id ?? null, turn.run?.trigger ?? null, fence]);
  const messages = batch.flatMap(({ messages }) => messages.map(messageValues));
  const columns = (alias: string, names: readonly string[]) => sql.join(names.map((name) => sql.ref(`${alias}.${name}`)));
  return sql<{ id: string }>`with v as materialized (select * from ${unnestRows('v', [...TURN_COLUMNS, 'run_id', 'trigger_type', 'fence'], turns)}),
    ${heldSessions(sql`select session_id from v`)},
    began as (insert into turns (${sql.join(TURN_COLUMNS.map((name) => sql.id(name)))})
      select ${columns('v', TURN_COLUMNS)} from v join held on held.id = v.session_id and held.fencing_token = v.fence
      returning turns.id),
    run as (insert into runs (id, session_id, turn_id, trigger_type, created_at_ms)
      select v.run_id, v.session_id, v.id, v.trigger_type, v.started_at_ms from v where v.run_id is not null and v.id in (select id from began)),
    message as (insert into messages (${sql.join(MESSAGE_COLUMNS.map((name) => sql.id(name)))})
      select ${columns('m', MESSAGE_COLUMNS)} from ${unnestRows('m', MESSAGE_COLUMNS, messages)} where m.turn_id in (select id from began))
    select id from began`;
}
