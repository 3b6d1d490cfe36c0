import { z } from 'zod';
import { TurnchartError } from '../../protocol/errors.js';
import type { CommandSandbox } from '../../protocol/sandbox.js';
import { probeBwrap } from './bwrap.js';
import { commandContainment, type Containment, type ContainmentChoice } from './containment.js';

/**
 * `--sandbox auto|bwrap|off` (`workspaceTools({ sandbox })`): whether run_command's commands run in
 * a bubblewrap sandbox. `auto` (the default) takes it when bwrap is installed and a probe runs a
 * command in it, and otherwise runs without, saying so in one warning line at start; `bwrap` insists
 * (unusable, the start fails); `off` runs without. Without a sandbox, commands keep the PID
 * namespace or process group `commandContainment` finds.
 */
export const sandboxChoiceSchema = z.enum(['auto', 'bwrap', 'off']);

export type SandboxChoice = z.infer<typeof sandboxChoiceSchema>;

interface SettledSandbox {
  containment: Containment;
  sandbox: CommandSandbox;
  /** One line for the host to print at start, when `auto` found no usable sandbox. */
  warning: string | null;
}

/** Settles the choice; `bwrap` without a usable bwrap is a `SandboxUnavailable` error. bwrap is looked for in `hostEnv.PATH`. */
export function settleSandbox(choice: SandboxChoice, containmentChoice: ContainmentChoice, hostEnv: NodeJS.ProcessEnv): SettledSandbox {
  if (choice === 'off') {
    return { containment: commandContainment(containmentChoice), sandbox: { kind: 'off', reason: 'the operator turned the sandbox off' }, warning: null };
  }
  // A sandbox is a PID namespace: a command that must see the host's processes cannot have one.
  if (containmentChoice === 'process-group') {
    if (choice === 'bwrap') {
      throw new TurnchartError('InvalidWorkspaceOptions', "sandbox 'bwrap' runs commands in a PID namespace of their own, which commandContainment 'process-group' rules out");
    }
    return { containment: commandContainment('process-group'), sandbox: { kind: 'off', reason: "the embedder chose commandContainment 'process-group'" }, warning: null };
  }
  const probe = probeBwrap(hostEnv.PATH);
  if (probe.kind === 'bwrap') return { containment: probe, sandbox: { kind: 'bwrap' }, warning: null };
  if (choice === 'bwrap') {
    throw new TurnchartError('SandboxUnavailable', `--sandbox bwrap: ${probe.reason}; install bubblewrap where it can make namespaces, or choose --sandbox off`);
  }
  return {
    containment: commandContainment(),
    sandbox: { kind: 'off', reason: probe.reason },
    warning: `no sandbox: ${probe.reason}; run_command runs with the host user's file access`,
  };
}

/** What the run_command tool tells the model about what its commands can reach. */
export function confinementDescription(sandbox: CommandSandbox): string {
  if (sandbox.kind === 'bwrap') {
    return (
      'It runs in a bubblewrap sandbox: the file system is read-only (HOME included) except the workspace, /tmp is ' +
      'private, empty and gone when it ends, the host\'s /run (its services\' sockets) is hidden, and it has no network ' +
      'unless its agent allows it (the sandbox policy says which).'
    );
  }
  return `The command itself is not confined to the workspace: it can read and write wherever the host's user can (no sandbox: ${sandbox.reason}).`;
}
