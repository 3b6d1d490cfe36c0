import type { ToolExecutionResult } from '../define-tool.js';
import { EscapeError } from './confine.js';

const EXPLANATIONS: Record<string, string> = {
  ENOENT: 'does not exist',
  EISDIR: 'is a directory',
  ENOTDIR: 'has a part that is not a directory',
  EACCES: 'is not accessible (permission denied)',
  EPERM: 'is not accessible (operation not permitted)',
  ELOOP: 'is a symbolic link where a file was expected',
  EEXIST: 'already exists',
  ENOSPC: 'cannot be written: no space left on the device',
  EROFS: 'is on a read-only file system',
  // A FIFO or device: what `writeFileBeneath` raises for anything that is not a regular file.
  ENXIO: 'is not a regular file',
};

export function failed(content: string): ToolExecutionResult {
  return { status: 'failed', content };
}

/**
 * Runs a tool body and turns filesystem errors into failed results that name the workspace path,
 * rather than letting Node's message (which carries the absolute real path) reach the model.
 */
export async function withFsErrors(displayPath: string, body: () => Promise<ToolExecutionResult>): Promise<ToolExecutionResult> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof EscapeError) return failed(error.message);
    const code = (error as NodeJS.ErrnoException | null)?.code;
    const explanation = code === undefined ? undefined : EXPLANATIONS[code];
    if (explanation !== undefined) return failed(`'${displayPath}' ${explanation}`);
    throw error;
  }
}
