import type { Kysely, QueryResult } from 'kysely';
import type { ToolAudit } from '../src/protocol/audit.js';
import type { StoredMessage } from '../src/protocol/messages.js';
import { auditColumns } from './audit-rows.js';
import type { DialectName } from './dialect.js';
import { fencedInsert, type Row } from './fencing.js';
import { KeptStatement } from './kept-statement.js';
import { executeKept } from './prepared-statements.js';
import { messageToRow } from './rows.js';
import type { Database } from './schema.js';
import { encodeText } from './text-codec.js';

interface FencedMessage {
  message: StoredMessage;
  fence: number;
  audit: ToolAudit | undefined;
}

/** A message's audit columns when it has none: one column set for every message, so one statement. */
const NO_AUDIT = [null, null, null, null, null, null, null, null, null, null];

/**
 * The fenced insert of a message or tool result (RT-12's writes, two a step), with every column in
 * one fixed order — a message's audit columns are null. Its parameters are listed straight from the
 * message: building a row object (and spreading the audit into it) and reading its keys back cost
 * more than the rest of the call on SQLite, where the insert itself takes a few microseconds.
 */
const statement = new KeptStatement<FencedMessage>(
  (db, dialect, { message, fence, audit }) => {
    const row: Row = { ...messageToRow(message), ...(audit ? auditColumns(audit) : nullAuditColumns()) };
    return fencedInsert(dialect, 'messages', row, message.sessionId, fence, true).compile(db);
  },
  ({ message: m, fence, audit }) => {
    const kind = m.message.role === 'user' ? m.message.kind : 'normal';
    const audited = audit
      ? [
          encodeText(audit.toolCallId),
          encodeText(audit.toolName),
          audit.status,
          audit.argumentsHash,
          audit.dispatchedArgumentsHash,
          audit.verdict,
          audit.decidedBy,
          audit.errorCode,
          audit.permissionWaitMs,
          audit.executionMs,
        ]
      : NO_AUDIT;
    return [m.id, m.sessionId, m.turnId, m.sequence, m.message.role, kind, JSON.stringify(m.message), m.createdAtMs, ...audited, m.sessionId, fence];
  },
);

export function insertMessageFenced(db: Kysely<Database>, dialect: DialectName, message: StoredMessage, fence: number, audit?: ToolAudit): Promise<QueryResult<unknown>> {
  return executeKept(db, dialect, statement.compile(db, dialect, { message, fence, audit }));
}

function nullAuditColumns(): Row {
  return Object.fromEntries(Object.keys(auditColumns(SAMPLE_AUDIT)).map((column) => [column, null]));
}

const SAMPLE_AUDIT: ToolAudit = {
  toolCallId: '',
  toolName: '',
  argumentsHash: '',
  dispatchedArgumentsHash: null,
  verdict: 'none',
  decidedBy: null,
  status: 'succeeded',
  errorCode: null,
  permissionWaitMs: null,
  executionMs: null,
};
