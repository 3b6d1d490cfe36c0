/** A file system error saying the path (or a directory on it) does not exist: `ENOENT` or `ENOTDIR`. */
export function isMissing(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
