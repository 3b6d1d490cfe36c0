import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundled } from './bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A `turnchart serve` process, as an operator starts it. */
export interface HostProcess {
  url: string;
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** What it printed on stderr alone so far: its log (issue 27). */
  stderr(): string;
  /** Resolves with the exit code (or the signal) once it ends. */
  exited: Promise<number | string>;
  /** Resolves once it has ended and everything it printed has been read (`exited` may come before its last lines). */
  closed: Promise<void>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Starts `turnchart serve` in a child process and resolves once it prints its listening line (on
 * stdout) and, when its log is at `info`, logs it (on stderr): the two streams arrive in no set
 * order, and the log's start lines come before its listening line.
 */
export async function spawnHost(args: string[], env: Record<string, string> = {}): Promise<HostProcess> {
  const child = spawn(process.execPath, [bundled('cli'), 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  let stderr = '';
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const logsInfo = ['info', 'debug', 'trace'].includes(logLevelOf(args, { ...process.env, ...env }));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer, fromStderr: boolean) => {
      text += chunk.toString('utf8');
      if (fromStderr) stderr += chunk.toString('utf8');
      const match = /turnchart listening on (http:\/\/\S+)/.exec(text);
      if (match && (!logsInfo || stderr.includes(`listening on ${match[1]!}`))) resolve(match[1]!);
    };
    child.stdout!.on('data', (chunk: Buffer) => onData(chunk, false));
    child.stderr!.on('data', (chunk: Buffer) => onData(chunk, true));
    void closed.then(() => exited).then((code) => reject(new Error(`turnchart serve exited (${code}) before listening:\n${text}`)));
  });
  return { url, child, output: () => text, stderr: () => stderr, exited, closed, kill: (signal = 'SIGTERM') => child.kill(signal) };
}

/** The level the host logs at, as it reads it: the flag, else the variable, else info. */
function logLevelOf(args: string[], env: NodeJS.ProcessEnv): string {
  const flag = args.indexOf('--log-level');
  return (flag >= 0 ? args[flag + 1] : undefined) ?? (env.TURNCHART_LOG_LEVEL || 'info');
}
