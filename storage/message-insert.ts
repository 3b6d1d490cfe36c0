import { CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { ToolAudit } from '../src/protocol/audit.js';
import type { StoredMessage } from '../src/protocol/messages.js';
import { auditColumns } from './audit-rows.js';
import type { DialectName } from './dialect.js';
import { fencedInsert, type Row } from './fencing.js';
import { executeKept } from './prepared-statements.js';
import { messageToRow } from './rows.js';
import type { Database } from './schema.js';
import { encodeText } from './text-codec.js';

/**
 * The fenced insert of a message or tool result (RT-12's writes, two a step), with every column in
 * one fixed order — a message's audit columns are null — so there is one statement per dialect. Its
 * parameters are listed straight from the message: building a row object (and spreading the audit
 * into it) and reading its keys back cost more than the rest of the call on SQLite, where the insert
 * itself takes a few microseconds.
 */
export function insertMessageFenced(db: Kysely<Database>, dialect: DialectName, message: StoredMessage, fence: number, audit?: ToolAudit): Promise<QueryResult<unknown>> {
  return executeKept(db, dialect, CompiledQuery.raw(statementFor(db, dialect), parametersOf(message, fence, audit)));
}

/** The parameters in the statement's order: the message's columns, its audit's, then the fence (session id, token). */
function parametersOf(m: StoredMessage, fence: number, audit: ToolAudit | undefined): unknown[] {
  const kind = m.message.role === 'user' ? m.message.kind : 'normal';
  const head = [m.id, m.sessionId, m.turnId, m.sequence, m.message.role, kind, JSON.stringify(m.message), m.createdAtMs];
  if (!audit) return [...head, null, null, null, null, null, null, null, null, null, null, m.sessionId, fence];
  return [
    ...head,
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
    m.sessionId,
    fence,
  ];
}

const statements = new Map<DialectName, string>();

/**
 * The statement's text, built once per dialect through Kysely from a sample message with an audit;
 * the sample's own parameters must come out as `parametersOf` lists them, or the text is refused.
 */
function statementFor(db: Kysely<Database>, dialect: DialectName): string {
  const known = statements.get(dialect);
  if (known !== undefined) return known;
  const sample: StoredMessage = { id: 'i', sessionId: 's', turnId: 't', sequence: 1, createdAtMs: 2, message: { role: 'tool', toolCallId: 'c', toolName: 'n', status: 'succeeded', content: 'x' } };
  const audit: ToolAudit = {
    toolCallId: 'c',
    toolName: 'n',
    argumentsHash: 'a',
    dispatchedArgumentsHash: 'd',
    verdict: 'allowed',
    decidedBy: 'mode',
    status: 'succeeded',
    errorCode: 'e',
    permissionWaitMs: 3,
    executionMs: 4,
  };
  const row: Row = { ...messageToRow(sample), ...auditColumns(audit) };
  const compiled = fencedInsert(dialect, 'messages', row, sample.sessionId, 5, true).compile(db);
  const expected = parametersOf(sample, 5, audit);
  if (compiled.parameters.length !== expected.length || compiled.parameters.some((p, i) => p !== expected[i])) {
    throw new Error('the message insert lists its parameters in another order than insertMessageFenced assumes');
  }
  statements.set(dialect, compiled.sql);
  return compiled.sql;
}
