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
