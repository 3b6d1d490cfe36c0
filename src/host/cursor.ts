import type { SessionRow } from '../../storage/session-storage.js';
import { idSchema } from '../protocol/commands.js';

/** Paging through sessions: the cursor names the last session of a page (base64url JSON). */
export function encodeCursor(row: Pick<SessionRow, 'createdAtMs' | 'id'>): string {
  return Buffer.from(JSON.stringify([row.createdAtMs, row.id]), 'utf8').toString('base64url');
}

/** The position a cursor names, or null for anything this host did not give out. */
export function decodeCursor(cursor: string): { createdAtMs: number; id: string } | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 2) return null;
    const [createdAtMs, id] = value as unknown[];
    // Only an id storage can compare: a forged one with NUL would fail the query (a 503) on PostgreSQL.
    return Number.isSafeInteger(createdAtMs) && idSchema.safeParse(id).success ? { createdAtMs: createdAtMs as number, id: id as string } : null;
  } catch {
    return null;
  }
}
