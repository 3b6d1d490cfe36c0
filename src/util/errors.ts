/** What an error says, for a message or a log line: an `Error`'s message, anything else as a string. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A file system error saying the path (or a directory on it) does not exist: `ENOENT` or `ENOTDIR`. */
export function isMissing(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
