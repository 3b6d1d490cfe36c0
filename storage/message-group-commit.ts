import { sql, type Kysely } from 'kysely';
import type { ToolAudit } from '../src/protocol/audit.js';
import type { StoredMessage } from '../src/protocol/messages.js';
import { auditColumns, auditValues } from './audit-rows.js';
import { executeKept } from './prepared-statements.js';
import { GroupCommit, heldSessions, unnestRows } from './group-commit.js';
import { messageToRow, messageValues } from './rows.js';
import type { Database } from './schema.js';

/**
 * The fenced message inserts (RT-12's writes, two a step) grouped on PostgreSQL (group-commit.ts):
 * one `unnest` insert of every row whose session still has the row's fence.
 */

/** Any message: only its row's keys are read, for the column list. */
const SAMPLE: StoredMessage = { id: '', sessionId: '', turnId: '', sequence: 0, createdAtMs: 0, message: { role: 'assistant', text: '', reasoning: '', toolCalls: [] } };

export interface MessageWrite {
  message: StoredMessage;
  fence: number;
  audit: ToolAudit | null;
}

export function messageGroupCommit(
  db: Kysely<Database>,
  /** The one-row write and its fence check. */
  one: (write: MessageWrite) => Promise<void>,
  /** A row the batch did not insert: fenced (throws), or its id already there (written before). */
  notApplied: (write: MessageWrite) => Promise<void>,
): GroupCommit<MessageWrite> {
  return new GroupCommit<MessageWrite>({
    one,
    notApplied,
    key: (write) => write.message.id,
    many: async (batch) => new Set((await executeKept(db, 'postgres', batchInsert(batch).compile(db))).rows.map((row) => row.id)),
  });
}

/** The row's columns in the order `messageValues` and `auditValues` list them (the order of `messageToRow`'s and `auditColumns`' keys). */
const COLUMNS: readonly string[] = [...Object.keys(messageToRow(SAMPLE)), ...Object.keys(auditColumns(null))];

/**
 * One insert of every row whose session still has the row's fence, returning the ids it inserted.
 * Each column is one array parameter, so the text is the same for every batch size and stays
 * prepared on each connection.
 */
function batchInsert(batch: readonly MessageWrite[]) {
  const rows = batch.map(({ message, audit, fence }) => [...messageValues(message), ...auditValues(audit), fence]);
  if (rows[0]!.length !== COLUMNS.length + 1) throw new Error('the batched message insert lists other columns than messageValues and auditValues');
  return sql<{ id: string }>`with v as materialized (select * from ${unnestRows('v', [...COLUMNS, 'fence'], rows)}),
    ${heldSessions(sql`select session_id from v`)}
    insert into messages (${sql.join(COLUMNS.map((name) => sql.id(name)))})
    select ${sql.join(COLUMNS.map((name) => sql.ref(`v.${name}`)))}
    from v join held on held.id = v.session_id and held.fencing_token = v.fence
    on conflict (id) do nothing
    returning messages.id`;
}
