import { spawn } from 'node:child_process';
import { OutputCollector } from './output-collector.js';

export interface GroupRunOptions {
  cwd: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** Between SIGTERM and SIGKILL when the run is stopped. */
  killGraceMs: number;
  maxOutputBytes: number;
}

export interface GroupRun {
  /** Why it ended: on its own, or stopped by the timeout or the abort signal. */
  ending: 'exited' | 'timed_out' | 'aborted';
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  /** stdout and stderr interleaved as they arrived, bounded. */
  output: string;
}

/**
 * Runs `command` with `/bin/sh -c` as the leader of a new process group, so that stopping it
 * reaches everything it started: on timeout or abort the group gets SIGTERM, then SIGKILL after
 * the grace. When the shell exits, whatever it left running in its group is killed too — a
 * background process would otherwise hold the output pipes open and outlive the tool call.
 */
export function runInGroup(command: string, options: GroupRunOptions): Promise<GroupRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd: options.cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = new OutputCollector(options.maxOutputBytes);
    const timers: NodeJS.Timeout[] = [];
    let ending: GroupRun['ending'] = 'exited';

    const stop = (why: GroupRun['ending']) => {
      if (ending !== 'exited' || child.pid === undefined) return;
      ending = why;
      signalGroup(child.pid, 'SIGTERM');
      timers.push(setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), options.killGraceMs));
    };
    const onAbort = () => stop('aborted');
    const cleanUp = () => {
      timers.forEach(clearTimeout);
      options.signal.removeEventListener('abort', onAbort);
    };

    child.stdout.on('data', (chunk: Buffer) => output.add(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.add(chunk));
    child.on('error', (error) => {
      cleanUp();
      reject(error);
    });
    child.on('exit', () => {
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      // A process that left the group (setsid) may still hold the pipes: do not wait on it for ever.
      timers.push(setTimeout(() => [child.stdout, child.stderr].forEach((s) => s.destroy()), options.killGraceMs + 1_000));
    });
    child.on('close', (exitCode, exitSignal) => {
      cleanUp();
      resolve({ ending, exitCode, exitSignal, output: output.text() });
    });

    timers.push(setTimeout(() => stop('timed_out'), options.timeoutMs));
    options.signal.addEventListener('abort', onAbort, { once: true });
    if (options.signal.aborted) onAbort();
  });
}

/**
 * Signals every process in the group led by `pid`. Errors are dropped: this runs from timers,
 * where a throw would take the host down, and the likely one (ESRCH) means the group is gone.
 */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Gone already (ESRCH), or nothing more this process can do about it.
  }
}
