import type { Insertable, Selectable } from 'kysely';
import { toMs, type CompactionsTable } from './schema.js';
import { decodeText, encodeText } from './text-codec.js';
import type { CompactionRow } from './session-storage.js';

export function compactionToRow(c: CompactionRow): Insertable<CompactionsTable> {
  return {
    id: c.id,
    session_id: c.sessionId,
    position: c.position,
    boundary_message_id: c.boundaryMessageId,
    boundary_sequence: c.boundarySequence,
    summary: encodeText(c.summary),
    replay_text: encodeText(c.replayText),
    created_at_ms: c.createdAtMs,
    rewound_at_ms: c.rewoundAtMs,
  };
}

export function rowToCompaction(row: Selectable<CompactionsTable>): CompactionRow {
  return {
    id: row.id,
    sessionId: row.session_id,
    position: Number(row.position),
    boundaryMessageId: row.boundary_message_id,
    boundarySequence: Number(row.boundary_sequence),
    summary: decodeText(row.summary),
    replayText: decodeText(row.replay_text),
    createdAtMs: toMs(row.created_at_ms),
    rewoundAtMs: toMs(row.rewound_at_ms),
  };
}
