/**
 * Issue 25: `turnchart serve --sandbox auto|bwrap|off`. A command in the bubblewrap sandbox still
 * dies with a SIGKILLed host, with everything in its PID namespace; `--sandbox bwrap` where bwrap
 * cannot be used stops the start; `auto` there starts without a sandbox and says so once.
 *
 * No sleeps: the command's processes hold the FIFO `holders` open (its end-of-file says they are all
 * gone), and the test also polls each of their pids until none exists, under a deadline.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workspaceTools } from '../../src/index.js';
import { sqliteFile } from '../support/databases.js';
import { useFifoHolders } from '../support/fifo-holders.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { logLines } from '../support/log-lines.js';
import { useTempDirs } from '../support/workspace.js';
import { eventually, isAlive } from '../tools/support.js';

const tempDir = useTempDirs('turnchart-hostile-sandbox-');
const fifo = useFifoHolders();
const sandbox = workspaceTools({ root: '/tmp', warn: () => undefined }).find((tool) => tool.name === 'run_command')!.sandbox;
const bwrap = sandbox?.kind === 'bwrap';
const skipReason = bwrap ? '' : ` (skipped: no usable bwrap — ${sandbox?.kind === 'off' ? sandbox.reason : 'no sandbox'})`;

/** A PATH without bwrap (the host itself is started by absolute path). */
const NO_BWRAP = { PATH: '/nonexistent' };

/** The pids of this machine's processes whose command line holds `text`. */
async function pidsRunning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) pids.push(Number(name));
  }
  return pids;
}

/** Every process in the PID namespace `pid` is in (as this test sees them: by their pids here). */
async function pidsInNamespaceOf(pid: number): Promise<number[]> {
  const namespace = await readlink(`/proc/${pid}/ns/pid`);
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (/^\d+$/.test(name) && (await readlink(`/proc/${name}/ns/pid`).catch(() => '')) === namespace) pids.push(Number(name));
  }
  return pids;
}

describe('turnchart serve --sandbox', { timeout: 90_000 }, () => {
  const processes: HostProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      p.kill('SIGKILL');
      await p.exited;
    }
  });

  it.skipIf(!bwrap)(`bwrap, the host SIGKILLed mid-command: bwrap, the command, its setsid escape and all of its namespace die${skipReason}`, async () => {
    const db = sqliteFile();
    const workspace = await tempDir();
    const holders = fifo(path.join(workspace, 'holders'));
    const id = randomUUID();
    // Each shell's command line carries the id, so the test can find the sandbox from outside.
    const command = `exec 3>holders; setsid sh -c 'sleep 1000; touch escaped; : ${id}' & echo started >&3; sleep 1000; touch marker; : ${id}`;
    const script = path.join(workspace, 'model.json');
    await writeFile(script, JSON.stringify([{ text: 'working', toolCalls: [{ id: 'long-1', name: 'run_command', args: { command } }] }]));
    try {
      const host = await spawnHost(['--db', db.file, '--workspace', workspace, '--model', `scripted:${script}`, '--permission-mode', 'auto', '--sandbox', 'bwrap']);
      processes.push(host);
      const sessionId = (await call(host.url, 'POST', '/sessions', {})).body.sessionId as string;
      await call(host.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'go' }] });
      await holders.read('started');

      const ours = await readlink('/proc/self/ns/pid');
      // bwrap outside the namespace, and inside: its init, the shell, the escape and both sleeps.
      // `started` is written before the two sleeps have surely started: wait until all of them run.
      let doomed: number[] = [];
      await eventually(async () => {
        const found = await pidsRunning(id);
        const inSandbox: number[] = [];
        for (const pid of found) if ((await readlink(`/proc/${pid}/ns/pid`).catch(() => ours)) !== ours) inSandbox.push(pid);
        if (inSandbox.length === 0) return false;
        doomed = [...new Set([...found, ...(await pidsInNamespaceOf(inSandbox[0]!).catch(() => []))])];
        return doomed.length >= 6;
      }, 'bwrap and its namespace (its init, the shell, the escape, both sleeps) all run, the command in a PID namespace of its own');

      host.kill('SIGKILL');
      expect(await host.exited).toBe('SIGKILL');
      await holders.allClosed();
      await eventually(() => doomed.every((pid) => !isAlive(pid)), `every process of the sandbox (${doomed.join(', ')}) is gone`);
      expect(existsSync(path.join(workspace, 'marker'))).toBe(false);
      expect(existsSync(path.join(workspace, 'escaped'))).toBe(false);
    } finally {
      await db.drop();
    }
  });

  it('bwrap where bwrap cannot be found: the host does not start, and says why', async () => {
    const db = sqliteFile();
    try {
      await expect(spawnHost(['--db', db.file, '--workspace', await tempDir(), '--sandbox', 'bwrap'], NO_BWRAP)).rejects.toThrow(
        /turnchart serve exited \(1\) before listening:[\s\S]*"level":"fatal".*"msg":"--sandbox bwrap: bwrap not found \(apt-get install bubblewrap\); install bubblewrap where it can make namespaces, or choose --sandbox off"/,
      );
    } finally {
      await db.drop();
    }
  });

  it('auto (the default) where bwrap cannot be found: the host starts without a sandbox, saying so in one line', async () => {
    const db = sqliteFile();
    try {
      const host = await spawnHost(['--db', db.file, '--workspace', await tempDir()], NO_BWRAP);
      processes.push(host);
      const warning = "no sandbox: bwrap not found (apt-get install bubblewrap); run_command runs with the host user's file access";
      expect(logLines(host.stderr()).filter((line) => line.msg.includes('no sandbox'))).toEqual([expect.objectContaining({ level: 'warn', msg: warning })]);
    } finally {
      await db.drop();
    }
  });

  it('off (here from TURNCHART_SANDBOX) where bwrap cannot be found: no sandbox was asked for, so no warning', async () => {
    const db = sqliteFile();
    try {
      const host = await spawnHost(['--db', db.file, '--workspace', await tempDir()], { ...NO_BWRAP, TURNCHART_SANDBOX: 'off' });
      processes.push(host);
      expect(host.output()).not.toContain('no sandbox');
    } finally {
      await db.drop();
    }
  });
});
