import { sql, type Kysely } from 'kysely';
import { executeKept } from './prepared-statements.js';
import { GroupCommit, heldSessions, unnestRows } from './group-commit.js';
import type { Database } from './schema.js';
import type { TurnEnd } from './session-storage.js';
import { encodeText } from './text-codec.js';
import { encodeTrackers } from './trackers-codec.js';

/**
 * The fenced ends of turns grouped on PostgreSQL (group-commit.ts): one `unnest` update of every
 * turn still running whose session still has the write's fence. With many sessions at once a turn's
 * end is its last commit; grouped, the ends of one loop turn share it.
 */

export interface TurnEndWrite {
  turnId: string;
  end: TurnEnd;
  fence: number;
}

export function turnEndGroupCommit(
  db: Kysely<Database>,
  one: (write: TurnEndWrite) => Promise<void>,
  notApplied: (write: TurnEndWrite) => Promise<void>,
): GroupCommit<TurnEndWrite> {
  return new GroupCommit<TurnEndWrite>({
    one,
    notApplied,
    key: (write) => write.turnId,
    many: async (batch) => new Set((await executeKept(db, 'postgres', batchUpdate(batch).compile(db))).rows.map((row) => row.id)),
  });
}

const COLUMNS = ['id', 'status', 'error_code', 'error_message', 'final_text', 'finished_at_ms', 'guardrail_trackers', 'fence'];

function batchUpdate(batch: readonly TurnEndWrite[]) {
  const rows = batch.map(({ turnId, end, fence }) => [
    turnId,
    end.status,
    end.errorCode,
    encodeText(end.errorMessage),
    encodeText(end.finalText),
    end.finishedAtMs,
    encodeTrackers(end.trackers),
    fence,
  ]);
  const set = COLUMNS.slice(1, -1).map((name) => sql`${sql.id(name)} = ${sql.ref(`v.${name}`)}`);
  return sql<{ id: string }>`with v as materialized (select * from ${unnestRows('v', COLUMNS, rows)}),
    ${heldSessions(sql`select turns.session_id from turns join v on v.id = turns.id`)}
    update turns set ${sql.join(set)}
    from v, held
    where turns.id = v.id and turns.status = 'running' and held.id = turns.session_id and held.fencing_token = v.fence
    returning turns.id`;
}
