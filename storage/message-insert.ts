import type { Kysely, QueryResult } from 'kysely';
import type { ToolAudit } from '../src/protocol/audit.js';
import type { StoredMessage } from '../src/protocol/messages.js';
import { auditColumns, auditValues } from './audit-rows.js';
import type { DialectName } from './dialect.js';
import { fencedInsert } from './fencing.js';
import { KeptStatement } from './kept-statement.js';
import { executeKept } from './prepared-statements.js';
import { messageToRow, messageValues } from './rows.js';
import type { Database } from './schema.js';

interface FencedMessage {
  message: StoredMessage;
  fence: number;
  audit: ToolAudit | null;
}

/**
 * The fenced insert of a message or tool result (RT-12's writes, two a step), with every column in
 * one fixed order — a message's audit columns are null. Its parameters are listed straight from the
 * message: building a row object (and spreading the audit into it) and reading its keys back cost
 * more than the rest of the call on SQLite, where the insert itself takes a few microseconds.
 */
const statement = new KeptStatement<FencedMessage>(
  (db, dialect, { message, fence, audit }) =>
    fencedInsert(dialect, 'messages', { ...messageToRow(message), ...auditColumns(audit) }, message.sessionId, fence, true).compile(db),
  ({ message, fence, audit }) => [...messageValues(message), ...auditValues(audit), message.sessionId, fence],
);

export function insertMessageFenced(db: Kysely<Database>, dialect: DialectName, message: StoredMessage, fence: number, audit?: ToolAudit): Promise<QueryResult<unknown>> {
  return executeKept(db, dialect, statement.compile(db, dialect, { message, fence, audit: audit ?? null }));
}
