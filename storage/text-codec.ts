/**
 * Free text from a model or a tool stored in a plain text column. PostgreSQL cannot hold U+0000 in
 * `text` (SQLite can, but many of its functions stop there), so a value containing it is stored as
 * a marker followed by its JSON — which escapes U+0000 — and read back exactly. A value that happens
 * to start with the marker is encoded the same way, so every string round-trips; every other value
 * is stored as it is, and rows written before this encoding read back unchanged.
 */
const MARK = '\u0001json:';

export function encodeText(value: string): string;
export function encodeText(value: string | null): string | null;
export function encodeText(value: string | null): string | null {
  if (value === null) return null;
  return value.includes('\u0000') || value.startsWith(MARK) ? MARK + JSON.stringify(value) : value;
}

export function decodeText(value: string): string;
export function decodeText(value: string | null): string | null;
export function decodeText(value: string | null): string | null {
  if (value === null || !value.startsWith(MARK)) return value;
  return JSON.parse(value.slice(MARK.length)) as string;
}
