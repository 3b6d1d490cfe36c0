import { execFileSync } from 'node:child_process';
import { constants, openSync } from 'node:fs';
import net from 'node:net';
import { afterEach } from 'vitest';

/**
 * A FIFO the test reads and the processes under test hold open for writing (`exec 3>FILE`, and
 * every child inherits fd 3): what they write says they started, and end-of-file says every holder
 * is gone — killed or exited — which no pid check across PID namespaces can say. Read without a
 * thread: opened non-blocking and watched by the event loop, which on Linux reports the hang-up only
 * once a writer has come and gone, so no end is seen before the command starts.
 */
export interface FifoHolders {
  /** Resolves with everything read once it contains `text`; rejects after `deadlineMs`. */
  read(text: string, deadlineMs?: number): Promise<string>;
  /** Resolves once every writer has closed it; rejects after `deadlineMs` (a holder outlived the deadline). */
  allClosed(deadlineMs?: number): Promise<void>;
}

/** Makes FIFOs (`mkfifo`) and stops watching them after each test. Register after `useTempDirs`. */
export function useFifoHolders(): (file: string) => FifoHolders {
  const sockets: net.Socket[] = [];
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy();
  });
  return (file) => {
    execFileSync('mkfifo', [file]);
    const socket = new net.Socket({ fd: openSync(file, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
    sockets.push(socket);
    let text = '';
    let ended = false;
    const waiters = new Set<() => void>();
    const wake = () => waiters.forEach((waiter) => waiter());
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      wake();
    });
    socket.on('end', () => {
      ended = true;
      wake();
    });
    const until = (holds: () => boolean, what: string, deadlineMs: number) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!holds()) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${file}: ${what} within ${deadlineMs} ms (read so far: ${JSON.stringify(text)})`));
        }, deadlineMs);
        waiters.add(check);
        check();
      });
    return {
      read: async (wanted, deadlineMs = 10_000) => {
        await until(() => text.includes(wanted), `no ${JSON.stringify(wanted)}`, deadlineMs);
        return text;
      },
      allClosed: (deadlineMs = 10_000) => until(() => ended, 'a holder is still open', deadlineMs),
    };
  };
}
