import { z } from 'zod';

/**
 * The sandbox run_command's commands run in, settled once when the workspace tools are built
 * (`--sandbox auto|bwrap|off`). The tool carries it (`Tool.sandbox`) and the world state's sandbox
 * policy reports it to the model, so what the model is told is what the tool it calls does.
 */
export type CommandSandbox =
  /** bubblewrap: the file system read-only but for the workspace, a private /tmp, no /run, a PID namespace, no network unless the agent allows it. */
  | { kind: 'bwrap' }
  /** No file-system sandbox: the command can do what the host's user can. `reason` says why (for the model and the operator). */
  | { kind: 'off'; reason: string };

/** What confines a session's commands: the sandbox its run_command reports, and whether the session's agent lets them use the network. */
export interface SessionSandbox {
  command: CommandSandbox;
  network: boolean;
}

/**
 * RT-21: the snapshot's `sandbox`, what the model is told (`runtime/sandbox-policy`) in a client's terms.
 * `none`: every tool runs in the host process with its user's permissions; `reason` says why the
 * agent's run_command has no sandbox (`--sandbox off`, bubblewrap missing), null when it has no run_command.
 */
export type SandboxView = { kind: 'none'; reason: string | null } | { kind: 'bwrap'; network: boolean };

export function sandboxViewOf(sandbox: SessionSandbox | null): SandboxView {
  if (sandbox === null) return { kind: 'none', reason: null };
  if (sandbox.command.kind === 'off') return { kind: 'none', reason: sandbox.command.reason };
  return { kind: 'bwrap', network: sandbox.network };
}

/**
 * An agent's own sandbox settings (`agents.NAME.sandbox` in the configuration file, `createRuntime({ agents })`).
 * `network: true` lets its commands reach the network (the host's, localhost included); without it
 * a command under bubblewrap has none. Without a sandbox (`--sandbox off`) every command has the host's network anyway.
 */
export const agentSandboxSchema = z.strictObject({
  network: z.boolean().optional(),
});

/** An agent's sandbox settings as the runtime resolved them. */
export interface AgentSandbox {
  network: boolean;
}

/** An agent that says nothing: no network for its commands. */
export const DEFAULT_AGENT_SANDBOX: AgentSandbox = Object.freeze({ network: false });
