import type { PermissionMode } from '../../protocol/commands.js';
import type { SessionSandbox } from '../../protocol/sandbox.js';

const WRITES_AND_EXECUTES: Readonly<Record<PermissionMode, string>> = {
  ask: 'ask the user before each call',
  auto: 'allowed',
  read_only: 'refused',
};

/**
 * The `runtime/sandbox-policy` body: tells the model what its tool calls may do in this mode, and
 * in what sandbox its commands run (`sandbox` null: no tool of the session reports one).
 */
export function renderSandboxPolicy(mode: PermissionMode, sandbox: SessionSandbox | null = null): string {
  return [
    '<sandbox_policy>',
    `permission_mode: ${mode}`,
    'reads: allowed',
    `writes_and_executes: ${WRITES_AND_EXECUTES[mode]}`,
    ...sandboxLines(sandbox),
    '</sandbox_policy>',
  ].join('\n');
}

/** Stated plainly so the model does not assume an isolation it does not have, nor try what the sandbox refuses. */
function sandboxLines(sandbox: SessionSandbox | null): string[] {
  const none = 'sandbox: none — tools run in the host process with its permissions';
  if (sandbox === null) return [none];
  if (sandbox.command.kind === 'off') return [`${none}; reason: ${sandbox.command.reason}`];
  return [
    'sandbox: bubblewrap, for run_command — the file system is read-only except the workspace; /tmp is private and empty; ' +
      "the host's /run is hidden; the command sees only its own processes (PID namespace). The other tools run in the host " +
      'process, confined to the workspace',
    sandbox.network ? "network: allowed — commands share the host's network" : 'network: none — commands cannot open connections, to localhost neither',
  ];
}
