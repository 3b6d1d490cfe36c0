import { describe, expect, it } from 'vitest';
import { renderSandboxPolicy } from '../../../src/context/world-state/sandbox-policy.js';

describe('renderSandboxPolicy', () => {
  it('renders four lines per mode', () => {
    const expected = (mode: string, writes: string) =>
      [
        '<sandbox_policy>',
        `permission_mode: ${mode}`,
        'reads: allowed',
        `writes_and_executes: ${writes}`,
        'sandbox: none — tools run in the host process with its permissions',
        '</sandbox_policy>',
      ].join('\n');
    expect(renderSandboxPolicy('ask')).toBe(expected('ask', 'ask the user before each call'));
    expect(renderSandboxPolicy('auto')).toBe(expected('auto', 'allowed'));
    expect(renderSandboxPolicy('read_only')).toBe(expected('read_only', 'refused'));
  });
});

describe('renderSandboxPolicy with the sandbox of the session\'s commands', () => {
  const head = ['<sandbox_policy>', 'permission_mode: auto', 'reads: allowed', 'writes_and_executes: allowed'];
  const bwrapLine =
    "sandbox: bubblewrap, for run_command — the file system is read-only except the workspace; /tmp is private and empty; the host's /run is hidden; " +
    'the command sees only its own processes (PID namespace). The other tools run in the host process, confined to the workspace';

  it('bubblewrap: what a command can reach, and the network its agent allows', () => {
    expect(renderSandboxPolicy('auto', { command: { kind: 'bwrap' }, network: false })).toBe(
      [...head, bwrapLine, 'network: none — commands cannot open connections, to localhost neither', '</sandbox_policy>'].join('\n'),
    );
    expect(renderSandboxPolicy('auto', { command: { kind: 'bwrap' }, network: true })).toBe(
      [...head, bwrapLine, "network: allowed — commands share the host's network", '</sandbox_policy>'].join('\n'),
    );
  });

  it('no sandbox: the same line as without run_command, with the reason', () => {
    expect(renderSandboxPolicy('auto', { command: { kind: 'off', reason: 'bwrap not found (apt-get install bubblewrap)' }, network: true })).toBe(
      [...head, 'sandbox: none — tools run in the host process with its permissions; reason: bwrap not found (apt-get install bubblewrap)', '</sandbox_policy>'].join('\n'),
    );
  });
});
