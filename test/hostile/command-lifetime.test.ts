/**
 * Issue 22, finding 6: commands outlived their host, and `setsid` escaped the kill.
 * `run_command "sleep 30; touch marker"`, then `kill -KILL` the host: the marker appeared after the
 * restarted host had reported the turn `interrupted`. `setsid sh -c 'sleep 20; touch m' &` returned
 * `exit code 0` and the marker appeared 20 s later. Every process a command starts now dies with
 * the command and with the host, SIGKILL included.
 *
 * No sleeps: each process under test holds the FIFO `holders` open, and end-of-file on it proves
 * every holder is dead, so a marker it would have written afterwards can never appear. Every wait
 * has a deadline, so a regression fails instead of hanging.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, constants, existsSync, openSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { commandContainment } from '../../src/tools/sandbox/containment.js';
import { reapLeftoverCommands } from '../../src/tools/sandbox/command-ledger.js';
import { COMMAND_MARKER_VARIABLE } from '../../src/tools/sandbox/process-table.js';
import { sqliteFile } from '../support/databases.js';
import { useFifoHolders } from '../support/fifo-holders.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { useTempDirs } from '../support/workspace.js';
import { execute, toolNamed } from '../tools/support.js';
import { bundled } from '../support/bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tempDir = useTempDirs('turnchart-hostile-life-');
const fifo = useFifoHolders();
const namespaces = commandContainment().kind === 'pid-namespace';
const uid = process.getuid?.() ?? 'user';

/**
 * Starts a process that leaves the command's process group and session (`setsid`), holding
 * `holders`, and waits until it runs (it answers through the FIFO `sync`), so it exists before the
 * command exits. Then `touch escaped` if it is still alive — it must not be.
 */
const SETSID_ESCAPE =
  "mkfifo sync; setsid sh -c 'echo > sync; sleep 1000; touch escaped' 3>holders >/dev/null 2>&1 & read x < sync; echo spawned";

describe('every process a command starts ends with it', () => {
  it.each(['auto', 'process-group'] as const)('%s: a setsid escape is killed when the command exits', async (commandContainment) => {
    const root = await tempDir();
    const holders = fifo(path.join(root, 'holders'));
    const result = await execute(toolNamed('run_command', { root, commandContainment, killGraceMs: 100 }), { command: SETSID_ESCAPE });
    expect(result).toEqual({ status: 'succeeded', content: 'exit code 0\nspawned\n' });
    await holders.allClosed();
    expect(existsSync(path.join(root, 'escaped'))).toBe(false);
  });

  it.each(['auto', 'process-group'] as const)('%s: a setsid escape is killed when the command is cancelled', async (commandContainment) => {
    const root = await tempDir();
    const holders = fifo(path.join(root, 'holders'));
    const controller = new AbortController();
    const pending = execute(
      toolNamed('run_command', { root, commandContainment, killGraceMs: 100 }),
      { command: `${SETSID_ESCAPE}; echo ready > holders; sleep 1000` },
      controller.signal,
    );
    await holders.read('ready');
    controller.abort();
    expect(await pending).toMatchObject({ status: 'cancelled' });
    await holders.allClosed();
    expect(existsSync(path.join(root, 'escaped'))).toBe(false);
  });

  it.skipIf(!namespaces)('a command that ignores SIGTERM is killed after the grace, its setsid escape with it', async () => {
    const root = await tempDir();
    const holders = fifo(path.join(root, 'holders'));
    const result = await execute(toolNamed('run_command', { root, killGraceMs: 200 }), {
      command: `trap '' TERM; ${SETSID_ESCAPE}; echo ready > holders; while :; do sleep 1000; done`,
      timeoutMs: 1_000,
    });
    expect(result).toMatchObject({ status: 'failed', content: expect.stringMatching(/^command timed out after 1000 ms/) });
    await holders.allClosed();
  });
});

describe('every process a command starts ends with the host', { timeout: 90_000 }, () => {
  const processes: HostProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      p.kill('SIGKILL');
      await p.exited;
    }
  });

  it.skipIf(!namespaces)('turnchart serve SIGKILLed mid-command: the command and its setsid escape die, no marker appears, the restarted host goes on with the turn without running the command again', async () => {
    const db = sqliteFile();
    const workspace = await tempDir();
    const holders = fifo(path.join(workspace, 'holders'));
    const command = "exec 3>holders; setsid sh -c 'sleep 30; touch escaped' & echo started >&3; sleep 30; touch marker";
    const script = path.join(workspace, 'model.json');
    await writeFile(script, JSON.stringify([{ text: 'working', toolCalls: [{ id: 'long-1', name: 'run_command', args: { command } }] }]));
    const args = ['--db', db.file, '--workspace', workspace, '--model', `scripted:${script}`, '--permission-mode', 'auto'];
    try {
      const first = await spawnHost(args);
      processes.push(first);
      const sessionId = (await call(first.url, 'POST', '/sessions', {})).body.sessionId as string;
      const turn = await call(first.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'go' }] });
      await holders.read('started');

      first.kill('SIGKILL');
      expect(await first.exited).toBe('SIGKILL');
      await holders.allClosed();
      expect(existsSync(path.join(workspace, 'marker'))).toBe(false);
      expect(existsSync(path.join(workspace, 'escaped'))).toBe(false);

      // Issue 26: the restarted host goes on with the turn; run_command is not idempotent, so its call gets the interrupted result.
      const after = path.join(workspace, 'after.json');
      await writeFile(after, JSON.stringify([{ text: 'the command was cut off; I will not run it again' }]));
      const second = await spawnHost(['--db', db.file, '--workspace', workspace, '--model', `scripted:${after}`, '--permission-mode', 'auto']);
      processes.push(second);
      const state = await call(second.url, 'GET', `/sessions/${sessionId}/turns/${turn.body.turnId as string}?wait=30`);
      expect(state.body).toMatchObject({ status: 'completed', outcome: { finalText: 'the command was cut off; I will not run it again' } });
      const messages = (await call(second.url, 'GET', `/sessions/${sessionId}/messages`)).body.messages as { message: { role: string; status?: string } }[];
      expect(messages.filter((m) => m.message.role === 'tool').map((m) => m.message.status)).toEqual(['cancelled']);
      expect(existsSync(path.join(workspace, 'marker'))).toBe(false);
    } finally {
      await db.drop();
    }
  });

  it('process-group fallback: what a SIGKILLed host left running is ended by the next reap of its ledger', { timeout: 90_000 }, async () => {
    const workspace = await tempDir();
    const tmp = await tempDir();
    const holders = fifo(path.join(workspace, 'holders'));
    const command = `${SETSID_ESCAPE}; echo started > holders; exec 3>holders; sleep 1000; touch marker`;
    const host = spawn(process.execPath, [bundled('command-host'), 'process-group', workspace, command], {
      cwd: ROOT,
      env: { ...process.env, TMPDIR: tmp },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const exited = new Promise((resolve) => host.once('exit', resolve));
    const ledger = path.join(tmp, `turnchart-commands-${uid}`);
    try {
      // Its own TMPDIR: a fresh tsx cache, so a slow start on a loaded machine.
      await holders.read('started', 45_000);
      host.kill('SIGKILL');
      await exited;

      const report = await reapLeftoverCommands({ dir: ledger });
      expect(report.reaped).toBe(1);
      expect(report.killed).toBeGreaterThan(0);
      await holders.allClosed();
      expect(existsSync(path.join(workspace, 'marker'))).toBe(false);
      expect(existsSync(path.join(workspace, 'escaped'))).toBe(false);
      expect(await readdir(ledger)).toEqual([]);
    } finally {
      // Whatever failed above, nothing of it outlives the test.
      host.kill('SIGKILL');
      await exited;
      await reapLeftoverCommands({ dir: ledger });
    }
  });

  it('turnchart serve, at start, ends the processes of a ledger entry whose owner is gone, and removes the entry', { timeout: 60_000 }, async () => {
    const db = sqliteFile();
    const workspace = await tempDir();
    const tmp = await tempDir();
    const ledger = path.join(tmp, `turnchart-commands-${uid}`);
    await mkdir(ledger, { mode: 0o700 });
    const holders = fifo(path.join(workspace, 'holders'));
    const marker = 'left-by-a-dead-host-0001';
    // A leftover: a detached process carrying the marker, in a session of its own, holding the FIFO.
    const writer = openSync(path.join(workspace, 'holders'), constants.O_WRONLY);
    const leftover = spawn('/bin/sh', ['-c', 'exec sleep 1000'], { detached: true, stdio: ['ignore', 'ignore', 'ignore', writer], env: { [COMMAND_MARKER_VARIABLE]: marker } });
    closeSync(writer);
    leftover.unref();
    // Its owner: a process that has exited.
    const deadOwner = spawnSync('true').pid;
    const entry = { version: 1, marker, owner: { pid: deadOwner, startTime: '1' }, pid: leftover.pid, pidStartTime: null, containment: 'process-group', startedAtMs: Date.now() };
    await writeFile(path.join(ledger, `${marker}.json`), JSON.stringify(entry));

    try {
      const host = await spawnHost(['--db', db.file, '--workspace', workspace], { TMPDIR: tmp });
      processes.push(host);
      await holders.allClosed();
      expect(await readdir(ledger)).toEqual([]);
      expect(host.output()).toContain('left running by a host that is gone');
    } finally {
      try {
        process.kill(leftover.pid!, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
      await db.drop();
    }
  });
});
