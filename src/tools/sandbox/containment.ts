import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { BwrapContainment } from './bwrap.js';
import { findExecutable } from './find-executable.js';
import { launchOf } from './launch.js';

/**
 * How the processes of a command are held together so that all of them end with it, and with the
 * host. Chosen once per process: `bwrap` by the sandbox choice (`settleSandbox`), the other two by
 * `commandContainment()` when there is no sandbox.
 *
 * - `bwrap`: bubblewrap, which also confines the file system and the network (see `bwrap.ts`); its
 *   PID namespace and `--die-with-parent` give the same lifetime as `pid-namespace`.
 * - `pid-namespace`: `setpriv --pdeathsig KILL unshare --pid --fork --kill-child --mount-proc`. The
 *   command gets its own PID namespace and its own /proc, so it sees none of the host's processes
 *   (nor their environ or cmdline). When the command's shell exits, the namespace's init exits and
 *   the kernel kills every process left in the namespace, `setsid` ones included; when the host
 *   dies, even by SIGKILL, setpriv's parent-death signal kills unshare, whose `--kill-child` kills
 *   the init, and with it the namespace. `userNamespace` adds `--user --map-current-user`, which an
 *   unprivileged host needs to mount /proc; a root host runs without it (the command keeps root's
 *   file access) but with CAP_SYS_ADMIN dropped, so it cannot unmount its /proc to reach the host's.
 * - `process-group`: `/bin/sh -c` as the leader of a new process group, today's way where
 *   namespaces are not available (not Linux, user namespaces disabled, util-linux missing) or the
 *   embedder asked for it. Processes that leave the group are found by the marker in their
 *   environment (`COMMAND_MARKER_VARIABLE`); nothing ends them if the host is SIGKILLed until its
 *   next start reaps them from the ledger.
 */
export type Containment =
  | BwrapContainment
  | { kind: 'pid-namespace'; setpriv: string; unshare: string; userNamespace: boolean }
  | { kind: 'process-group'; reason: string };

/** `auto` probes; `process-group` forces the fallback (a command that must see the host's processes, a test). */
export type ContainmentChoice = 'auto' | 'process-group';

/** Below any sane start of a namespace; a probe that takes longer means something is wrong. */
const PROBE_TIMEOUT_MS = 5_000;

const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

let probed: Containment | null = null;

/** The containment commands run under: the embedder's choice, else what the probe found (once per process). */
export function commandContainment(choice: ContainmentChoice = 'auto'): Containment {
  if (choice === 'process-group') return { kind: 'process-group', reason: 'chosen by the embedder' };
  return (probed ??= probeContainment());
}

/**
 * Tries the namespace launches in order and keeps the first that really runs a command as the
 * second process of a fresh PID namespace. Synchronous, since tools are built synchronously; it
 * runs once per process and is bounded by a timeout.
 */
export function probeContainment(): Containment {
  if (process.platform !== 'linux') return { kind: 'process-group', reason: `PID namespaces are Linux only (this is ${process.platform})` };
  const setpriv = findSystemExecutable('setpriv');
  const unshare = findSystemExecutable('unshare');
  if (!setpriv || !unshare) return { kind: 'process-group', reason: 'setpriv and unshare (util-linux) were not found' };
  const root = process.getuid?.() === 0;
  // Root first tries to keep its own user ids (and its file access); anyone else needs a user namespace to mount /proc.
  const candidates = root ? [false, true] : [true];
  let failure = '';
  for (const userNamespace of candidates) {
    const containment: Containment = { kind: 'pid-namespace', setpriv, unshare, userNamespace };
    // No file-system sandbox in these launches: the place is not read.
    const { file, args } = launchOf(containment, 'echo "$$"', { workspace: '/', network: true });
    const result = spawnSync(file, args, {
      env: { PATH: process.env.PATH ?? FALLBACK_PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: PROBE_TIMEOUT_MS,
      killSignal: 'SIGKILL',
      encoding: 'utf8',
    });
    // The command is the init's first child: pid 2 of the new namespace.
    if (result.status === 0 && result.stdout.trim() === '2') return containment;
    failure = (result.error?.message ?? result.stderr.trim().split('\n').at(-1)) || `exit ${result.status ?? result.signal}`;
  }
  return { kind: 'process-group', reason: `no PID namespace could be made (${failure})` };
}

/** An absolute path to `name` in PATH (or the usual system directories), or null. */
function findSystemExecutable(name: string): string | null {
  return findExecutable(name, [...(process.env.PATH ?? '').split(path.delimiter), ...FALLBACK_PATH.split(':')]);
}

/** What the run_command tool tells the model about the lifetime of what it starts. */
export function lifetimeDescription(containment: Containment): string {
  if (containment.kind === 'pid-namespace' || containment.kind === 'bwrap') {
    return (
      'It runs in its own PID namespace and sees only its own processes: every process it starts, in the background or ' +
      'detached with setsid included, is ended when it exits, is cancelled or times out, and when the host stops or dies.'
    );
  }
  return (
    'Processes it leaves in the background, or detaches with setsid, are ended when it exits, is cancelled or times out ' +
    '(found by their process group and a marker in their environment). If the host dies they may run until it restarts.'
  );
}
