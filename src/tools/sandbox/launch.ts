import { bwrapLaunch, type CoveredPath } from './bwrap.js';
import type { Containment } from './containment.js';

/** Where one command runs: the workspace (its working directory, and under bwrap the one writable path) and whether it may use the network (bwrap only). */
export interface Place {
  workspace: string;
  network: boolean;
  /** bwrap only: the host's own state the sandbox covers (`coveredPaths`). */
  covered?: readonly CoveredPath[];
  /**
   * bwrap only: a directory above the workspace (its real path) shown empty and read-only but for the
   * workspace: the host's workspace, when the session works in one user's directory beneath it, so the
   * command sees neither the other users' directories nor the host's files.
   */
  enclosing?: string;
}

export interface Launch {
  file: string;
  args: string[];
  /** bwrap only: the fd on which it writes, as JSON, the host pid of the sandbox's init (whose process group holds the command). */
  sandboxInfoFd?: 3;
}

/**
 * The namespace's init: runs its arguments (the command's shell) as its one child, waits, and exits
 * with the child's status. The command is not the init itself because an init ignores every signal
 * it has no handler for, SIGTERM included: as a child, the command's shell gets the process group's
 * SIGTERM like any process, and once it exits the init exits, and the kernel kills whatever is left
 * in the namespace. `; exit $?` keeps the shell from replacing itself with its last command. Its own
 * stderr is /dev/null, the command's is kept on fd 3: sh reports a child killed by a signal
 * ("Terminated") on its stderr, which is no output of the command.
 */
const INIT_SCRIPT = 'exec 3>&2 2>/dev/null; "$@"; exit $?';

/** In the init's child: takes the command's stderr back from fd 3 and becomes its arguments. */
const RESTORE_STDERR = 'exec 2>&3 3>&-; exec "$@"';

/** The program and arguments that run `command` (with `/bin/sh -c`) under `containment`, in `place`. */
export function launchOf(containment: Containment, command: string, place: Place): Launch {
  if (containment.kind === 'process-group') return { file: '/bin/sh', args: ['-c', command] };
  if (containment.kind === 'bwrap') return bwrapLaunch(containment, command, place);
  const { setpriv, unshare, userNamespace } = containment;
  // As root without a user namespace the command keeps root's ids, but not CAP_SYS_ADMIN: with it,
  // it could unmount its own /proc and find the host's underneath. (In a user namespace its
  // capabilities count only there, and the host's /proc entries stay closed to it.)
  const dropAdmin = userNamespace ? [] : [setpriv, '--bounding-set', '-sys_admin', '--inh-caps', '-sys_admin', '--'];
  return {
    file: setpriv,
    args: [
      // The kernel sends unshare SIGKILL when this host's spawning thread dies, however it dies.
      '--pdeathsig',
      'KILL',
      unshare,
      '--pid',
      '--fork',
      // unshare's child (the init) gets SIGKILL when unshare dies; the namespace dies with its init.
      '--kill-child',
      '--mount-proc',
      ...(userNamespace ? ['--user', '--map-current-user'] : []),
      '/bin/sh',
      '-c',
      INIT_SCRIPT,
      'turnchart-init',
      '/bin/sh',
      '-c',
      RESTORE_STDERR,
      'turnchart-command',
      ...dropAdmin,
      '/bin/sh',
      '-c',
      command,
    ],
  };
}
