import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

/**
 * The flags a text file is opened with (O_NOFOLLOW is added by the walk beneath the root).
 * O_NONBLOCK: opening a FIFO must not hang the tool; it is refused below as not a regular file.
 */
export const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

export type TextFile = { kind: 'text'; text: string; size: number; truncated: boolean } | { kind: 'refused'; reason: string };

export interface ReadTextOptions {
  maxBytes: number;
  /** What to do with a larger file: read its first `maxBytes` (whole lines only) or refuse it. */
  whenLarger: 'read_prefix' | 'refuse';
}

/**
 * A regular UTF-8 text file, read at most `maxBytes` deep: binary and non-UTF-8 content is refused.
 * `opening` opens it with `READ_FLAGS`; the handle is closed here.
 */
export async function readTextFile(opening: Promise<FileHandle>, options: ReadTextOptions): Promise<TextFile> {
  const handle = await opening;
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { kind: 'refused', reason: stat.isDirectory() ? 'is a directory' : 'is not a regular file' };
    const truncated = stat.size > options.maxBytes;
    if (truncated && options.whenLarger === 'refuse') {
      return { kind: 'refused', reason: `is ${stat.size} bytes, larger than the ${options.maxBytes}-byte limit` };
    }
    const buffer = Buffer.alloc(Math.min(stat.size, options.maxBytes));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return decode(buffer.subarray(0, bytesRead), stat.size, truncated);
  } finally {
    await handle.close();
  }
}

function decode(bytes: Buffer, size: number, truncated: boolean): TextFile {
  if (bytes.includes(0)) return { kind: 'refused', reason: 'looks like a binary file (it contains NUL bytes)' };
  let text: string;
  try {
    // `stream` when truncated: a character cut at the end of the prefix is not an encoding error.
    // `ignoreBOM` keeps a byte-order mark in the text, so an edit writes it back.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes, { stream: truncated });
  } catch {
    return { kind: 'refused', reason: 'is not valid UTF-8 text' };
  }
  return { kind: 'text', text: truncated ? wholeLines(text) : text, size, truncated };
}

/** A prefix without its last, probably partial, line — unless it has only one line. */
function wholeLines(text: string): string {
  const end = text.lastIndexOf('\n');
  return end === -1 ? text : text.slice(0, end + 1);
}

/** Lines without their terminators; a final newline does not make an empty last line. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
