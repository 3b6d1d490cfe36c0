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
  /** Resolves with the exit code (or the signal) once it ends. */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
}

/** Starts `turnchart serve` in a child process and resolves once it prints its listening line. */
export async function spawnHost(args: string[], env: Record<string, string> = {}): Promise<HostProcess> {
  const child = spawn(process.execPath, [bundled('cli'), 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const match = /turnchart listening on (http:\/\/\S+)/.exec(text);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => reject(new Error(`turnchart serve exited (${code}) before listening:\n${text}`)));
  });
  return { url, child, output: () => text, exited, kill: (signal = 'SIGTERM') => child.kill(signal) };
}
