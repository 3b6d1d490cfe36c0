import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandContainment, probeContainment } from '../../src/tools/sandbox/containment.js';
import { runContained } from '../../src/tools/sandbox/run-contained.js';
import { useTempDirs } from '../support/workspace.js';
import { execute, toolNamed } from './support.js';
import { bundled } from '../support/bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tempDir = useTempDirs('turnchart-contain-');
const linuxWithUtilLinux = process.platform === 'linux' && spawnSync('unshare', ['--version']).status === 0 && spawnSync('setpriv', ['--version']).status === 0;
const contained = commandContainment();
const root = process.getuid?.() === 0;

describe('the containment probe', () => {
  it.skipIf(!linuxWithUtilLinux)('finds a PID namespace on Linux with util-linux; as root without a user namespace', () => {
    expect(contained).toMatchObject({ kind: 'pid-namespace', userNamespace: !root });
    expect(probeContainment()).toEqual(contained);
  });

  it('is overridden by the embedder', () => {
    expect(commandContainment('process-group')).toEqual({ kind: 'process-group', reason: 'chosen by the embedder' });
  });

  it.skipIf(!linuxWithUtilLinux || !root)('as an unprivileged user it takes a user namespace, and commands run in it', () => {
    const probe = spawnSync('setpriv', ['--reuid', 'nobody', '--regid', 'nogroup', '--clear-groups', '--', process.execPath, bundled('probe-containment')], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: '/tmp' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(probe.stderr).toBe('');
    expect(JSON.parse(probe.stdout)).toMatchObject({
      containment: { kind: 'pid-namespace', userNamespace: true },
      result: { status: 'succeeded', content: 'exit code 0\n2\n' },
    });
  });
});

describe.skipIf(contained.kind !== 'pid-namespace')('a command in its PID namespace', () => {
  it('sees only its own processes: its init, itself and what it starts', async () => {
    // The shell counts /proc itself (a glob, no child), with one child of its own alive: a pipeline
    // would race, since its last stage may not exist yet when its first one reads /proc.
    const result = await execute(toolNamed('run_command', { root: await tempDir() }), {
      command: 'echo $$ $PPID; sleep 30 & set -- /proc/[0-9]*; echo $#; kill $!',
    });
    expect(result).toEqual({ status: 'succeeded', content: 'exit code 0\n2 1\n3\n' });
  });

  it.skipIf(!root)('as root, cannot unmount its /proc to reach the host\'s (CAP_SYS_ADMIN is dropped)', async () => {
    // umount's own message goes to /dev/null: stderr and stdout reach the result as they arrive, and it could land after the echo.
    const result = await execute(toolNamed('run_command', { root: await tempDir() }), { command: 'umount /proc 2>/dev/null; echo "umount: $?"; ls /proc | grep -c "^[0-9]"' });
    expect(result.content).toMatch(/umount: [1-9]\d*\n[1-9]\n$/);
  });

  it('reports a shell killed by a signal as the shell would: 128 + the signal', async () => {
    const result = await execute(toolNamed('run_command', { root: await tempDir() }), { command: 'echo before; kill -KILL $$' });
    expect(result).toEqual({ status: 'failed', content: 'exit code 137\nbefore\n' });
  });

  it('says so in the tool description (without a sandbox)', () => {
    const tool = toolNamed('run_command', { root: '/tmp', sandbox: 'off' });
    expect(tool.description).toContain('own PID namespace');
    expect(tool.description).toContain('not confined to the workspace');
  });
});

describe('the process-group fallback', () => {
  it('says what it does and does not cover in the tool description', () => {
    const tool = toolNamed('run_command', { root: '/tmp', commandContainment: 'process-group' });
    expect(tool.description).not.toContain('PID namespace');
    expect(tool.description).toContain('If the host dies they may run until it restarts');
    expect(tool.description).toContain('not confined to the workspace');
  });

  it('reports a shell killed by a signal with the signal', async () => {
    const result = await execute(toolNamed('run_command', { root: await tempDir(), commandContainment: 'process-group' }), { command: 'echo before; kill -KILL $$' });
    expect(result).toEqual({ status: 'failed', content: 'killed by SIGKILL\nbefore\n' });
  });
});

describe('runContained', () => {
  it.each([contained, { kind: 'process-group', reason: 'test' } as const])('answers not_started for a command that cannot start, and leaves no ledger entry ($kind)', async (containment) => {
    const base = await tempDir();
    const ledgerDir = path.join(base, 'ledger');
    const run = await runContained('true', {
      cwd: path.join(base, 'missing'),
      env: { PATH: '/usr/bin:/bin' },
      containment,
      timeoutMs: 10_000,
      signal: new AbortController().signal,
      killGraceMs: 100,
      onOutput: () => undefined,
      ledgerDir,
    });
    expect(run).toMatchObject({ ending: 'not_started', reason: expect.stringContaining('ENOENT') });
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(ledgerDir)).toEqual([]);
  });

  it('does not start a command whose signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const run = await runContained('touch should-not-exist', {
      cwd: await tempDir(),
      env: {},
      containment: contained,
      timeoutMs: 10_000,
      signal: controller.signal,
      killGraceMs: 100,
      onOutput: () => undefined,
      ledgerDir: path.join(await tempDir(), 'ledger'),
    });
    expect(run).toEqual({ ending: 'aborted', exitCode: null, exitSignal: null });
  });
});
