import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { findExecutable } from './find-executable.js';
import type { Launch, Place } from './launch.js';

/**
 * The bubblewrap sandbox a command runs in under `--sandbox auto|bwrap`:
 *
 * - the host's file system read-only (`--ro-bind / /`), the workspace the one writable path, a
 *   private empty `/tmp`, a minimal `/dev` and the namespace's own `/proc`;
 * - `/run` (and `/var/run` where it is a directory of its own) covered by an empty tmpfs. A
 *   read-only mount does not stop `connect()` to a unix socket on it (connecting needs write
 *   permission on the socket file, which the kernel checks without the mount's read-only flag), and
 *   `--unshare-net` leaves path sockets alone: without this the host's PostgreSQL, MySQL, Docker or
 *   D-Bus sockets under /run stay reachable. Sockets elsewhere (a home directory) stay reachable;
 *   abstract ones are per network namespace, so gone without network;
 * - no network (`--unshare-net`: only its own loopback) unless the agent allows it;
 * - a PID namespace (`--unshare-pid`) and `--die-with-parent`: when the command's shell exits,
 *   bwrap's init exits and the kernel ends everything left in the namespace, `setsid` escapes
 *   included; when the host dies, even by SIGKILL, the parent-death signal ends bwrap and with it the
 *   namespace;
 * - `--new-session`: the sandbox's init and the command in a process group of their own, which the
 *   host sends SIGTERM on timeout or cancel (found through `--info-fd`). bwrap's own process dies of
 *   SIGTERM, taking the sandbox with it at once; signalled alone, the command gets its grace;
 * - `--cap-drop ALL`: a host running as root would otherwise give the command every capability,
 *   enough to remount `/` read-write;
 * - the host's own state (`workspaceTools({ hiddenPaths })`: its SQLite database, in the workspace
 *   or anywhere else the read-only `/` shows) covered, after the workspace is bound since a later
 *   mount goes over an earlier one: a directory by an empty tmpfs made read-only, a file by
 *   `/dev/null` (a device the sandbox's `nodev` mounts refuse to open). Every directory between the
 *   workspace and a covered path is bound onto itself first: a mount point cannot be renamed or
 *   removed (EBUSY), so a command cannot move the database's directory aside and leave the next
 *   command, and the workspace tools, a copy of it under a name nobody hides. Only what exists when
 *   the command starts is covered.
 */
export interface BwrapContainment {
  kind: 'bwrap';
  bwrap: string;
  /** Directories of the host's unix sockets covered by an empty tmpfs. */
  hidden: readonly string[];
  /** /etc/resolv.conf's real path when it lies in a hidden directory (systemd-resolved's stub): bound back for a command with network. */
  resolvConf: string | null;
}

type BwrapProbe = BwrapContainment | { kind: 'unusable'; reason: string };

/** A path the sandbox covers: a hidden path's real path, as it is when the command starts. */
export interface CoveredPath {
  path: string;
  directory: boolean;
}

/** bwrap's info (`--info-fd`): the sandbox's init, as a pid of the host's namespace. */
const infoSchema = z.object({ 'child-pid': z.number().int().positive() });

const SANDBOX_INFO_FD = 3 as const;
const PROBE_TIMEOUT_MS = 5_000;
const SOCKET_DIRS = ['/run', '/var/run'];
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Each bwrap found, probed once per process. */
const probes = new Map<string, BwrapProbe>();

/**
 * bwrap, found in `pathVariable` (the host's PATH) and shown to make a sandbox by running a command
 * in one, or why not. Synchronous, since tools are built synchronously; bounded by a timeout.
 */
export function probeBwrap(pathVariable: string | undefined): BwrapProbe {
  if (process.platform !== 'linux') return { kind: 'unusable', reason: `bubblewrap is Linux only (this is ${process.platform})` };
  const bwrap = findExecutable('bwrap', (pathVariable ?? '').split(path.delimiter));
  if (!bwrap) return { kind: 'unusable', reason: 'bwrap not found (apt-get install bubblewrap)' };
  let probe = probes.get(bwrap);
  if (!probe) {
    probe = tryBwrap(bwrap);
    probes.set(bwrap, probe);
  }
  return probe;
}

/** Runs `echo "$$"; touch written` in a sandbox on a fresh directory: it must print 2 (pid 2 of a new namespace) and write there. */
function tryBwrap(bwrap: string): BwrapProbe {
  const hidden = SOCKET_DIRS.filter(isOwnDirectory);
  const sandbox: BwrapContainment = { kind: 'bwrap', bwrap, hidden, resolvConf: resolvConfIn(hidden) };
  let dir: string;
  try {
    dir = mkdtempSync(path.join(os.tmpdir(), 'turnchart-bwrap-probe-'));
  } catch (error) {
    return { kind: 'unusable', reason: `no directory to probe bwrap in (${(error as Error).message})` };
  }
  try {
    const workspace = realpathSync(dir);
    const { file, args } = bwrapLaunch(sandbox, 'echo "$$"; touch written', { workspace, network: false });
    const result = spawnSync(file, args, {
      env: { PATH: SYSTEM_PATH },
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      timeout: PROBE_TIMEOUT_MS,
      killSignal: 'SIGKILL',
      encoding: 'utf8',
    });
    if (result.status === 0 && result.stdout === '2\n' && existsSync(path.join(workspace, 'written'))) return sandbox;
    const failure = (result.error?.message ?? result.stderr.trim().split('\n').at(-1)) || `exit ${result.status ?? result.signal}`;
    return { kind: 'unusable', reason: `${bwrap} cannot make a sandbox here (${failure})` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The bwrap command line that runs `command` with `/bin/sh -c` in `place.workspace`. */
export function bwrapLaunch(sandbox: BwrapContainment, command: string, place: Place): Launch {
  const { workspace, network, covered = [], enclosing } = place;
  // Mounted before the workspace's bind, which bwrap then makes its mount point in; read-only after it.
  const shadow = enclosing !== undefined && enclosing !== workspace && beneath(enclosing, workspace) ? enclosing : null;
  return {
    file: sandbox.bwrap,
    // In order: each mount goes over what the ones before made, so the workspace is bound last.
    args: [
      '--ro-bind', '/', '/',
      '--dev', '/dev',
      '--proc', '/proc',
      '--tmpfs', '/tmp',
      ...sandbox.hidden.flatMap((dir) => ['--tmpfs', dir]),
      ...(network && sandbox.resolvConf ? ['--ro-bind', sandbox.resolvConf, sandbox.resolvConf] : []),
      ...(shadow ? ['--tmpfs', shadow] : []),
      '--bind', workspace, workspace,
      ...(shadow ? ['--remount-ro', shadow] : []),
      ...coverArgs(shadow ? { ...sandbox, hidden: [...sandbox.hidden, shadow] } : sandbox, workspace, covered),
      '--chdir', workspace,
      '--unshare-pid',
      // The host's System V IPC and POSIX message queues, as much the host's as its sockets.
      '--unshare-ipc',
      ...(network ? [] : ['--unshare-net']),
      '--die-with-parent',
      '--new-session',
      '--cap-drop', 'ALL',
      '--info-fd', String(SANDBOX_INFO_FD),
      '--',
      '/bin/sh', '-c', command,
    ],
    sandboxInfoFd: SANDBOX_INFO_FD,
  };
}

/**
 * The hidden paths (absolute) that exist now, by their real paths: what `bwrapLaunch` covers. A
 * missing one is left out (covering it would make bwrap create it on the host as a mount point).
 */
export async function coveredPaths(hidden: readonly string[]): Promise<CoveredPath[]> {
  const covered: CoveredPath[] = [];
  for (const given of hidden) {
    try {
      const real = await realpath(given);
      covered.push({ path: real, directory: (await lstat(real)).isDirectory() });
    } catch {
      // Missing (or unreadable, when nothing in the sandbox could open it either).
    }
  }
  return covered;
}

/**
 * The mounts that cover `covered` in a sandbox on `workspace`, in order: those the sandbox shows
 * (inside the workspace, or elsewhere under the read-only `/` but not under the sandbox's own /tmp,
 * /dev, /proc or a hidden socket directory), not below another covered directory, never the
 * workspace or above it. First the directories between the workspace and each covered path, bound
 * onto themselves (pinned: see above), then the covers, parents before children.
 */
export function coverArgs(sandbox: BwrapContainment, workspace: string, covered: readonly CoveredPath[]): string[] {
  const ownMounts = ['/tmp', '/dev', '/proc', ...sandbox.hidden];
  const shown = covered.filter(
    ({ path: place }) =>
      !beneath(place, workspace) && (beneath(workspace, place) || !ownMounts.some((mount) => beneath(mount, place))),
  );
  const kept = new Map<string, CoveredPath>();
  for (const one of shown) {
    if (!shown.some((other) => other.directory && other.path !== one.path && beneath(other.path, one.path))) kept.set(one.path, one);
  }
  const pinned = new Set<string>();
  for (const place of kept.keys()) {
    if (!beneath(workspace, place)) continue;
    for (let dir = path.dirname(place); dir !== workspace && beneath(workspace, dir); dir = path.dirname(dir)) pinned.add(dir);
  }
  const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [
    ...[...pinned].sort(byPath).flatMap((dir) => ['--bind', dir, dir]),
    ...[...kept.values()]
      .sort((a, b) => byPath(a.path, b.path))
      .flatMap(({ path: place, directory }) => (directory ? ['--tmpfs', place, '--remount-ro', place] : ['--ro-bind', '/dev/null', place])),
  ];
}

/** Is `target` the directory `dir` or below it? Both absolute and normalized. */
function beneath(dir: string, target: string): boolean {
  const rel = path.relative(dir, target);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** The sandbox's init pid from what bwrap wrote on its info fd, or null when that is not its info. */
export function sandboxPidFrom(info: string): number | null {
  try {
    const parsed = infoSchema.safeParse(JSON.parse(info));
    return parsed.success ? parsed.data['child-pid'] : null;
  } catch {
    return null;
  }
}

/** A directory, not a link to one (`/var/run` is mostly a link to `/run`, covered with it). */
function isOwnDirectory(dir: string): boolean {
  try {
    return lstatSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function resolvConfIn(hidden: readonly string[]): string | null {
  try {
    const target = realpathSync('/etc/resolv.conf');
    return hidden.some((dir) => target.startsWith(`${dir}/`)) ? target : null;
  } catch {
    return null;
  }
}
