import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundled } from '../support/bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `turnchart chat` in a child process on piped stdin and stdout, as a script would run it. */
export interface ChatProcess {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Where the output ends now: `waitFor(…, mark)` looks only at what comes after. */
  mark(): number;
  /** Types a line. */
  send(line: string): void;
  /** Ctrl+C as a pipe gets it: SIGINT. */
  interrupt(): void;
  /** Ctrl+D as a pipe gets it: the end of the input. */
  endInput(): void;
  /** Resolves once the output after `from` matches; fails with the whole output after `timeoutMs`. */
  waitFor(pattern: string | RegExp, from?: number, timeoutMs?: number): Promise<string>;
  exited: Promise<number | string>;
  kill(): void;
}

export function spawnChat(args: string[], env: Record<string, string> = {}): ChatProcess {
  const child = spawn(process.execPath, [bundled('cli'), 'chat', ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', TURNCHART_URL: '', TURNCHART_TOKEN: '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let text = '';
  let listeners: (() => void)[] = [];
  const onData = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  child.stdin!.on('error', () => undefined);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      resolve(code ?? signal ?? 'unknown');
      for (const listener of listeners) listener();
    }),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  return {
    child,
    output: () => text,
    mark: () => text.length,
    send: (line) => child.stdin!.write(`${line}\n`),
    interrupt: () => child.kill('SIGINT'),
    endInput: () => child.stdin!.end(),
    waitFor: (pattern, from = 0, timeoutMs = 30_000) =>
      new Promise<string>((resolve, reject) => {
        const test = (): RegExpMatchArray | null => {
          const rest = text.slice(from);
          return typeof pattern === 'string' ? (rest.includes(pattern) ? [pattern] : null) : rest.match(pattern);
        };
        const done = (): void => {
          clearTimeout(timer);
          listeners = listeners.filter((l) => l !== check);
        };
        const check = (): void => {
          const match = test();
          if (match) {
            done();
            resolve(match[0]);
          } else if (gone) {
            done();
            reject(new Error(`turnchart chat exited before printing ${String(pattern)}:\n${text}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`turnchart chat did not print ${String(pattern)} within ${timeoutMs} ms:\n${text}`));
        }, timeoutMs);
        listeners.push(check);
        check();
      }),
    exited,
    kill: () => child.kill('SIGKILL'),
  };
}

/** Kills what a failed test left running under its own unique marker (by the ids `pgrep` finds). */
export function killMarked(marker: string): void {
  const found = spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' });
  for (const pid of found.stdout.split('\n').filter((line) => /^\d+$/.test(line))) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Whether a process whose command line contains `marker` is running. */
export function running(marker: string): boolean {
  return spawnSync('pgrep', ['-f', marker]).status === 0;
}

/** Polls `condition` until it holds; fails after `timeoutMs`. A bounded wait on an explicit signal, not a sleep. */
export async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
