import type { PermissionMode } from '../../protocol/commands.js';

const WRITES_AND_EXECUTES: Readonly<Record<PermissionMode, string>> = {
  ask: 'ask the user before each call',
  auto: 'allowed',
  read_only: 'refused',
};

/** The `runtime/sandbox-policy` body: tells the model what its tool calls may do in this mode. */
export function renderSandboxPolicy(mode: PermissionMode): string {
  return [
    '<sandbox_policy>',
    `permission_mode: ${mode}`,
    'reads: allowed',
    `writes_and_executes: ${WRITES_AND_EXECUTES[mode]}`,
    // Stated plainly so the model does not assume an isolation it does not have.
    'sandbox: none — tools run in the host process with its permissions',
    '</sandbox_policy>',
  ].join('\n');
}
