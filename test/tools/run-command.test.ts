import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../support/workspace.js';
import { eventually, execute, isAlive, pidsIn, toolNamed } from './support.js';

const tempDir = useTempDirs('turnchart-cmd-');

/** Starts two background sleeps, writes their pids and the shell's to `pids`, and waits on them. */
const SLEEPERS = 'sleep 100 & echo $! > pids; sleep 100 & echo $! >> pids; echo $$ >> pids; wait';

describe('run_command', () => {
  it('runs in the workspace root and reports the exit code and the output, stderr included', async () => {
    const root = await tempDir();
    const result = await execute(toolNamed('run_command', { root }), { command: 'pwd; echo to-stderr >&2' });
    expect(result).toEqual({ status: 'succeeded', content: `exit code 0\n${await realpath(root)}\nto-stderr\n` });
  });

  it('fails on a non-zero exit, with the code and the output', async () => {
    const root = await tempDir();
    expect(await execute(toolNamed('run_command', { root }), { command: 'echo broke; exit 3' })).toEqual({ status: 'failed', content: 'exit code 3\nbroke\n' });
    expect(await execute(toolNamed('run_command', { root }), { command: 'true' })).toEqual({ status: 'succeeded', content: 'exit code 0\n(no output)' });
  });

  it('on timeout kills the whole process group and fails saying it timed out', async () => {
    const root = await tempDir();
    const result = await execute(toolNamed('run_command', { root, killGraceMs: 100 }), { command: `echo started; ${SLEEPERS}`, timeoutMs: 1_500 });
    expect(result).toEqual({ status: 'failed', content: 'command timed out after 1500 ms; its process group was killed. Output until then:\nstarted\n' });
    const pids = await pidsIn(path.join(root, 'pids'), 3);
    await eventually(() => pids.every((pid) => !isAlive(pid)), 'the shell and both sleeps are gone');
  });

  it('on abort kills the whole process group and ends cancelled', async () => {
    const root = await tempDir();
    const controller = new AbortController();
    const pending = execute(toolNamed('run_command', { root }), { command: SLEEPERS }, controller.signal);
    const pids = await pidsIn(path.join(root, 'pids'), 3);
    expect(pids.every(isAlive)).toBe(true);
    controller.abort();
    expect(await pending).toEqual({ status: 'cancelled', content: 'command cancelled; its process group was killed. Output until then:\n(no output)' });
    await eventually(() => pids.every((pid) => !isAlive(pid)), 'the shell and both sleeps are gone');
  });

  it('ends what the command left running in the background when it exits', async () => {
    const root = await tempDir();
    const result = await execute(toolNamed('run_command', { root }), { command: 'sleep 100 & echo $! > pids; echo left' });
    expect(result).toEqual({ status: 'succeeded', content: 'exit code 0\nleft\n' });
    const [pid] = await pidsIn(path.join(root, 'pids'), 1);
    await eventually(() => !isAlive(pid!), 'the background sleep is gone');
  });

  it('keeps the head and the tail of long output, with a note saying how much was cut', async () => {
    const root = await tempDir();
    const result = await execute(toolNamed('run_command', { root, maxOutputChars: 20 }), { command: 'echo start; seq 1 1000; echo end' });
    expect(result).toEqual({ status: 'succeeded', content: 'exit code 0\nstart\n1\n2\n\n[output truncated: 3883 of 3903 bytes not shown]\n\n1000\nend\n' });
  });

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
