import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useFifoHolders } from '../support/fifo-holders.js';
import { useTempDirs } from '../support/workspace.js';
import { execute, toolNamed } from './support.js';

const tempDir = useTempDirs('turnchart-cmd-');
const fifo = useFifoHolders();

/**
 * Holds the FIFO `holders` open on fd 3 (the shell and, inheriting it, two background sleeps), says
 * `ready` through it and waits on the sleeps: end-of-file on `holders` then means all three are gone.
 * (Pids would not do: in a PID namespace `$!` is the namespace's number, not the host's.)
 */
const SLEEPERS = 'exec 3>holders; sleep 100 & sleep 100 & echo ready >&3; wait';

describe.each(['auto', 'process-group'] as const)('run_command (containment %s)', (commandContainment) => {
  it('runs in the workspace root and reports the exit code and the output, stderr included', async () => {
    const root = await tempDir();
    const result = await execute(toolNamed('run_command', { root, commandContainment }), { command: 'pwd; echo to-stderr >&2' });
    expect(result).toEqual({ status: 'succeeded', content: `exit code 0\n${await realpath(root)}\nto-stderr\n` });
  });

  it('fails on a non-zero exit, with the code and the output', async () => {
    const root = await tempDir();
    expect(await execute(toolNamed('run_command', { root, commandContainment }), { command: 'echo broke; exit 3' })).toEqual({ status: 'failed', content: 'exit code 3\nbroke\n' });
    expect(await execute(toolNamed('run_command', { root, commandContainment }), { command: 'true' })).toEqual({ status: 'succeeded', content: 'exit code 0\n(no output)' });
  });

  it('on timeout kills the whole process group and fails saying it timed out', async () => {
    const root = await tempDir();
    const holders = fifo(path.join(root, 'holders'));
    const result = await execute(toolNamed('run_command', { root, killGraceMs: 100, commandContainment }), { command: `echo started; ${SLEEPERS}`, timeoutMs: 1_500 });
    expect(result).toEqual({ status: 'failed', content: 'command timed out after 1500 ms; its process group was killed. Output until then:\nstarted\n' });
    await holders.read('ready');
    await holders.allClosed();
  });

  it('on abort kills the whole process group and ends cancelled', async () => {
    const root = await tempDir();
    const holders = fifo(path.join(root, 'holders'));
    const controller = new AbortController();
    const pending = execute(toolNamed('run_command', { root, commandContainment }), { command: SLEEPERS }, controller.signal);
    await holders.read('ready');
    controller.abort();
    expect(await pending).toEqual({ status: 'cancelled', content: 'command cancelled; its process group was killed. Output until then:\n(no output)' });
    await holders.allClosed();
  });

  it('ends what the command left running in the background when it exits', async () => {
    const root = await tempDir();
    const holders = fifo(path.join(root, 'holders'));
    const result = await execute(toolNamed('run_command', { root, commandContainment }), { command: 'exec 3>holders; sleep 100 & echo left' });
    expect(result).toEqual({ status: 'succeeded', content: 'exit code 0\nleft\n' });
    await holders.allClosed();
  });

  it('keeps the head and the tail of long output, with a note saying how much was cut', async () => {
    const root = await tempDir();
    const result = await execute(toolNamed('run_command', { root, maxOutputChars: 20, commandContainment }), { command: 'echo start; seq 1 1000; echo end' });
    expect(result).toEqual({ status: 'succeeded', content: 'exit code 0\nstart\n1\n2\n\n[output truncated: 3883 of 3903 bytes not shown]\n\n1000\nend\n' });
  });

  it('a command that cannot start is a failed result, not a thrown error', async () => {
    const root = await tempDir();
    const tool = toolNamed('run_command', { root: path.join(root, 'gone'), commandContainment });
    const result = await execute(tool, { command: 'true' });
    expect(result.status).toBe('failed');
    expect(result.content).toMatch(/^command not started: /);
  });
});

describe('run_command input', () => {
  it('bounds timeoutMs by maxTimeoutMs and refuses an empty command or a NUL byte', () => {
    const tool = toolNamed('run_command', { root: '/tmp', maxTimeoutMs: 5_000, defaultTimeoutMs: 1_000 });
    expect(tool.input.safeParse({ command: 'ls', timeoutMs: 5_000 }).success).toBe(true);
    expect(tool.input.safeParse({ command: 'ls', timeoutMs: 5_001 }).success).toBe(false);
    expect(tool.input.safeParse({ command: 'ls', timeoutMs: 0 }).success).toBe(false);
    expect(tool.input.safeParse({ command: 'ls', timeoutMs: 1.5 }).success).toBe(false);
    expect(tool.input.safeParse({ command: '' }).success).toBe(false);
    expect(tool.input.safeParse({ command: 'ls\0' }).success).toBe(false);
  });
});
