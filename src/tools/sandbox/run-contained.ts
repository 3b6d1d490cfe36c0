import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { recordCommand } from './command-ledger.js';
import type { Containment } from './containment.js';
import { launchOf } from './launch.js';
import { COMMAND_MARKER_VARIABLE, killMarked, signalGroup } from './process-table.js';

export interface ContainedRunOptions {
  cwd: string;
  /** The command's whole environment (see `commandEnvironment`); the marker is added to it. */
  env: Record<string, string>;
  containment: Containment;
  timeoutMs: number;
  signal: AbortSignal;
  /** Between SIGTERM and SIGKILL when the run is stopped. */
  killGraceMs: number;
  /** stdout and stderr, as they arrive. */
  onOutput: (chunk: Buffer) => void;
  /** Where the run is recorded while it runs (default: this user's ledger). */
  ledgerDir?: string;
}

export type ContainedRun =
  | {
      /** Why it ended: on its own, or stopped by the timeout or the abort signal. */
      ending: 'exited' | 'timed_out' | 'aborted';
      exitCode: number | null;
      exitSignal: NodeJS.Signals | null;
    }
  | { ending: 'not_started'; reason: string };

/**
 * Runs `command` with `/bin/sh -c` under `containment`, as the leader of a new process group, and
 * resolves once it and everything it started are gone. On timeout or abort the group gets SIGTERM,
 * then SIGKILL after the grace. When the shell exits, whatever it left is killed: in a PID namespace
 * the kernel does it as the namespace's init exits; in the fallback the group gets SIGKILL and every
 * process carrying the run's marker too (a `setsid` escape). While it runs the run is in the ledger,
 * so a host that dies leaves it to be ended at the next start. Never rejects: a command that cannot
 * be started is `not_started`.
 */
export async function runContained(command: string, options: ContainedRunOptions): Promise<ContainedRun> {
  const marker = randomUUID();
  const record = await recordCommand(marker, options.containment.kind, options.ledgerDir);
  if (options.signal.aborted) {
    await record.close();
    return { ending: 'aborted', exitCode: null, exitSignal: null };
  }
  const { file, args } = launchOf(options.containment, command);
  let child: ChildProcessByStdio<null, Readable, Readable>;
  try {
    // Spawned from this (the main) thread: the parent-death signal follows the thread that forked.
    child = spawn(file, args, { cwd: options.cwd, env: { ...options.env, [COMMAND_MARKER_VARIABLE]: marker }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    await record.close();
    return { ending: 'not_started', reason: (error as Error).message };
  }
  const run = await watch(child, marker, options, (pid) => record.started(pid));
  await record.close();
  return run;
}

function watch(
  child: ChildProcessByStdio<null, Readable, Readable>,
  marker: string,
  options: ContainedRunOptions,
  onSpawn: (pid: number) => void,
): Promise<ContainedRun> {
  const fallback = options.containment.kind === 'process-group';
  return new Promise((resolve) => {
    const timers: NodeJS.Timeout[] = [];
    let ending: 'exited' | 'timed_out' | 'aborted' = 'exited';
    // The sweep for marked processes that left the group; awaited before the run counts as over.
    let sweep: Promise<unknown> = Promise.resolve();
    const killEverything = (pid: number) => {
      signalGroup(pid, 'SIGKILL');
      if (fallback) sweep = sweep.then(() => killMarked([marker])).catch(() => undefined);
    };

    const stop = (why: 'timed_out' | 'aborted') => {
      if (ending !== 'exited' || child.pid === undefined) return;
      ending = why;
      // The init and unshare of a namespace ignore SIGTERM; the command's shell and its group get it.
      signalGroup(child.pid, 'SIGTERM');
      timers.push(setTimeout(() => killEverything(child.pid!), options.killGraceMs));
    };
    const onAbort = () => stop('aborted');
    const cleanUp = () => {
      timers.forEach(clearTimeout);
      options.signal.removeEventListener('abort', onAbort);
    };

    child.stdout.on('data', options.onOutput);
    child.stderr.on('data', options.onOutput);
    child.on('spawn', () => {
      if (child.pid !== undefined) onSpawn(child.pid);
    });
    child.on('error', (error) => {
      // Only a failed spawn gets here (nothing else signals the child through Node).
      cleanUp();
      resolve({ ending: 'not_started', reason: error.message });
    });
    child.on('exit', () => {
      if (child.pid !== undefined) killEverything(child.pid);
      // Something that escaped every net may still hold the pipes: do not wait on it for ever.
      timers.push(setTimeout(() => [child.stdout, child.stderr].forEach((s) => s.destroy()), options.killGraceMs + 1_000));
    });
    child.on('close', (exitCode, exitSignal) => {
      cleanUp();
      void sweep.then(() => resolve({ ending, exitCode, exitSignal }));
    });

    timers.push(setTimeout(() => stop('timed_out'), options.timeoutMs));
    options.signal.addEventListener('abort', onAbort, { once: true });
    if (options.signal.aborted) onAbort();
  });
}
