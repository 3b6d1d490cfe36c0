import { readdir, readFile } from 'node:fs/promises';

/**
 * What this host learns about other processes from Linux's /proc. Elsewhere (no /proc) every
 * answer is "unknown" or "none found", and the callers fall back to what `kill` alone can do.
 */

/**
 * The environment variable that marks every process a command starts: inherited through fork and
 * exec, and through `setsid`, which leaves the process group but not the environment. Not named
 * `TURNCHART_*`, since no such variable ever reaches a command.
 */
export const COMMAND_MARKER_VARIABLE = 'RUN_COMMAND_ID';

/** How many times `killMarked` scans again for processes forked while it was killing. */
const MAX_KILL_PASSES = 20;

/** An environ larger than this is not searched (the kernel bounds it near this anyway; ours are a few KiB). */
const MAX_ENVIRON_BYTES = 4 * 1024 * 1024;

/**
 * `pid`'s start time (clock ticks after boot, field 22 of /proc/PID/stat), which with the pid
 * names one process for good: a pid is reused, a pid with its start time is not. Null when it
 * cannot be read (no such process, no /proc).
 */
export async function startTimeOf(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces or ')': count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether a process with this pid exists (a zombie counts as gone: it has exited and holds nothing). */
export async function isRunning(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists, owned by someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

/**
 * The pids whose environment carries `NAME=<one of markers>` (NAME being `COMMAND_MARKER_VARIABLE`),
 * among the processes whose environ this process may read (its own user's; every one as root). One
 * pass over /proc whatever the number of markers; reads are asynchronous, off the main thread.
 */
async function pidsMarked(markers: ReadonlySet<string>): Promise<number[]> {
  if (markers.size === 0) return [];
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return [];
  }
  const found = await Promise.all(
    names.map(async (name) => {
      if (!/^\d+$/.test(name) || Number(name) === process.pid) return null;
      try {
        const environ = await readFile(`/proc/${name}/environ`);
        return environ.length <= MAX_ENVIRON_BYTES && markers.has(markerIn(environ) ?? '') ? Number(name) : null;
      } catch {
        return null; // gone meanwhile, or not ours to read
      }
    }),
  );
  return found.filter((pid): pid is number => pid !== null);
}

const MARKER_ENTRY = Buffer.from(`${COMMAND_MARKER_VARIABLE}=`);

/** The marker's value in a NUL-separated environ, or null: the entry must start it or follow a NUL (`XRUN_COMMAND_ID=` is no match). */
function markerIn(environ: Buffer): string | null {
  for (let at = environ.indexOf(MARKER_ENTRY); at !== -1; at = environ.indexOf(MARKER_ENTRY, at + 1)) {
    if (at !== 0 && environ[at - 1] !== 0) continue;
    const start = at + MARKER_ENTRY.length;
    const end = environ.indexOf(0, start);
    return environ.toString('utf8', start, end === -1 ? environ.length : end);
  }
  return null;
}

/**
 * SIGKILLs every process carrying one of the markers, scanning again until none is found (a process
 * may fork between a scan and its kill; its child carries the marker too). A process that rewrote
 * its own environment is not found: this is a net for `setsid` and double forks, not a boundary.
 * Resolves with how many processes it signalled.
 */
export async function killMarked(markers: Iterable<string>): Promise<number> {
  const wanted = new Set(markers);
  const killed = new Set<number>();
  for (let pass = 0; pass < MAX_KILL_PASSES; pass += 1) {
    const pids = await pidsMarked(wanted);
    if (pids.length === 0) break;
    for (const pid of pids) if (signal(pid, 'SIGKILL')) killed.add(pid);
  }
  return killed.size;
}

/** Signals the process group `pgid`. False when it is gone (ESRCH) or not ours; never throws (timers call it). */
export function signalGroup(pgid: number, name: NodeJS.Signals): boolean {
  return signal(-pgid, name);
}

function signal(target: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(target, name);
    return true;
  } catch {
    return false;
  }
}
