import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';

/**
 * `mkfifo` for tests. After each test every FIFO made is opened once for writing, which lets go of
 * any reader stuck opening it: a runtime that regresses fails its test instead of keeping libuv's
 * threads, and so every later test in the worker, blocked. Register it after `useTempDirs` so it
 * runs before the directories are removed.
 */
export function useFifos(): (file: string) => Promise<void> {
  const made: string[] = [];
  afterEach(() => {
    for (const file of made.splice(0)) release(file);
  });
  return async (file) => {
    mkdirSync(path.dirname(file), { recursive: true });
    execFileSync('mkfifo', [file]);
    made.push(file);
  };
}

// Synchronous on purpose: the thread pool may be the very thing that is exhausted.
function release(file: string): void {
  try {
    closeSync(openSync(file, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // ENXIO: nobody is reading, nothing to let go.
  }
}
