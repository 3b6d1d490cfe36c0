import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { coveredPaths, sandboxPidFrom } from './bwrap.js';
import { recordCommand } from './command-ledger.js';
import type { Containment } from './containment.js';
import { launchOf } from './launch.js';
import { COMMAND_MARKER_VARIABLE, killMarked, signalGroup } from './process-table.js';

export interface ContainedRunOptions {
  cwd: string;
  /** The command's whole environment (see `commandEnvironment`); the marker is added to it. */
  env: Record<string, string>;
  containment: Containment;
  /** Under bwrap, whether the command shares the host's network (the agent allows it); default no. Without bwrap it always does. */
  network?: boolean;
  /** Under bwrap, the host's own state (absolute paths), covered in the sandbox where it exists when the command starts. */
  hidden?: readonly string[];
  /** Under bwrap, a directory above `cwd` (a real path) the command sees empty but for `cwd` (`Place.enclosing`). */
  enclosing?: string;
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
 * resolves once it and everything it started are gone. On timeout or abort the group gets SIGTERM
 * (under bwrap, the sandbox's group), then SIGKILL after the grace. When the shell exits, whatever it
 * left is killed: in a PID namespace (bwrap's too) the kernel does it as the namespace's init exits; in the fallback the group gets SIGKILL and every
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
  const covered = options.containment.kind === 'bwrap' && options.hidden?.length ? await coveredPaths(options.hidden) : [];
  const { file, args, sandboxInfoFd } = launchOf(options.containment, command, { workspace: options.cwd, network: options.network ?? false, covered, ...(options.enclosing !== undefined && { enclosing: options.enclosing }) });
  let child: ChildProcess;
  try {
    // Spawned from this (the main) thread: the parent-death signal follows the thread that forked.
    child = spawn(file, args, {
      cwd: options.cwd,
      env: { ...options.env, [COMMAND_MARKER_VARIABLE]: marker },
      detached: true,
      // bwrap's info fd (3), where it says which process group to send SIGTERM (see `bwrap.ts`).
      stdio: sandboxInfoFd === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe', 'pipe'],
    });
  } catch (error) {
    await record.close();
    return { ending: 'not_started', reason: (error as Error).message };
  }
  const info = sandboxInfoFd === undefined ? null : (child.stdio[sandboxInfoFd] as Readable);
  const run = await watch(child, info, marker, options, (pid) => record.started(pid));
  await record.close();
  return run;
}

function watch(
  child: ChildProcess,
  info: Readable | null,
  marker: string,
  options: ContainedRunOptions,
  onSpawn: (pid: number) => void,
): Promise<ContainedRun> {
  const fallback = options.containment.kind === 'process-group';
  const stdout = child.stdout!;
  const stderr = child.stderr!;
  return new Promise((resolve) => {
    // Under bwrap, the sandbox's process group once bwrap has named it: SIGTERM goes there, since
    // bwrap itself dies of it and takes the sandbox down without a grace (it still does, before the
    // name arrives). Forgotten once bwrap has exited: the sandbox is gone, and its pid may be reused.
    let sandboxGroup: number | null = null;
    let exited = false;
    // A stop that came before bwrap named the group: it waits for the name (see `stop`).
    let stopWhenNamed: (() => void) | null = null;
    const named = () => {
      const pending = stopWhenNamed;
      stopWhenNamed = null;
      pending?.();
    };
    if (info) {
      let text = '';
      info.setEncoding('utf8');
      info.on('data', (chunk: string) => {
        text += chunk;
        // The name is known as soon as its JSON is whole, which is before bwrap closes the fd.
        if (!exited && sandboxGroup === null) sandboxGroup = sandboxPidFrom(text);
        if (sandboxGroup !== null) named();
      });
      info.on('end', () => {
        if (!exited && sandboxGroup === null) sandboxGroup = sandboxPidFrom(text);
        named();
      });
      info.on('error', () => named());
    }
    const timers: NodeJS.Timeout[] = [];
    let ending: 'exited' | 'timed_out' | 'aborted' = 'exited';
    // The sweep for marked processes that left the group; awaited before the run counts as over.
    let sweep: Promise<unknown> = Promise.resolve();
    const killEverything = (pid: number) => {
      // Under bwrap this kills bwrap, whose parent-death signal then kills the sandbox's init, and the kernel the rest of it.
      signalGroup(pid, 'SIGKILL');
      if (fallback) sweep = sweep.then(() => killMarked([marker])).catch(() => undefined);
    };

    const terminate = () => {
      // The init and unshare of a namespace (and bwrap's init) ignore SIGTERM; the command's shell and its group get it.
      signalGroup(sandboxGroup ?? child.pid!, 'SIGTERM');
      timers.push(setTimeout(() => killEverything(child.pid!), options.killGraceMs));
    };
    const stop = (why: 'timed_out' | 'aborted') => {
      if (ending !== 'exited' || child.pid === undefined) return;
      ending = why;
      // Under bwrap, a stop right after the start may come before bwrap has named the sandbox's group
      // (its info arrives on the event loop's time): SIGTERM to bwrap then ends the sandbox at once,
      // without the command's grace. So it waits for the name, at most the grace itself.
      if (info && sandboxGroup === null && !exited) {
        stopWhenNamed = terminate;
        timers.push(setTimeout(named, options.killGraceMs));
      } else terminate();
    };
    const onAbort = () => stop('aborted');
    const cleanUp = () => {
      timers.forEach(clearTimeout);
      options.signal.removeEventListener('abort', onAbort);
    };

    stdout.on('data', options.onOutput);
    stderr.on('data', options.onOutput);
    child.on('spawn', () => {
      if (child.pid !== undefined) onSpawn(child.pid);
    });
    child.on('error', (error) => {
      // Only a failed spawn gets here (nothing else signals the child through Node).
      cleanUp();
      resolve({ ending: 'not_started', reason: error.message });
    });
    child.on('exit', () => {
      exited = true;
      sandboxGroup = null;
      stopWhenNamed = null;
      if (child.pid !== undefined) killEverything(child.pid);
      // Something that escaped every net may still hold the pipes: do not wait on it for ever.
      timers.push(setTimeout(() => [stdout, stderr, info].forEach((s) => s?.destroy()), options.killGraceMs + 1_000));
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
