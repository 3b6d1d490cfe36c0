import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteStorage } from '../../src/index.js';
import { sqliteFile } from '../support/databases.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { logMessages } from '../support/log-lines.js';
import { SseClient } from '../support/sse-client.js';
import { useTempDirs } from '../support/workspace.js';
import { bundled } from '../support/bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tempDir = useTempDirs('turnchart-cli-');

function runCli(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [bundled('cli'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('turnchart serve, as an operator runs it', { timeout: 60_000 }, () => {
  const processes: HostProcess[] = [];
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      p.kill('SIGKILL');
      await p.exited;
    }
  });

  it('prints its listening line with the port it got, uses the demo model when none is given, and answers /healthz', async () => {
    const db = sqliteFile();
    const p = await spawnHost(['--db', db.file, '--workspace', await tempDir()]);
    processes.push(p);
    expect(p.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(p.output()).toContain('the demo model');
    expect(await call(p.url, 'GET', '/healthz')).toMatchObject({ status: 200, body: { ok: true } });
  });

  it('shuts down cleanly on SIGTERM: the running turn is parked (its command stopped), streams close, storage is closed, and the next start goes on with it (issue 26)', async () => {
    const db = sqliteFile();
    const workspace = await tempDir();
    const marker = `turnchart-cli-${randomUUID()}`;
    const script = path.join(workspace, 'model.json');
    await writeFile(script, JSON.stringify([{ text: 'working', toolCalls: [{ name: 'run_command', args: { command: `sleep 600 # ${marker}` } }] }]));
    const p = await spawnHost(['--db', db.file, '--workspace', workspace, '--model', `scripted:${script}`], { TURNCHART_IDLE_TTL: '600' });
    processes.push(p);
    const sessionId = (await call(p.url, 'POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
    const sse = await SseClient.connect(`${p.url}/sessions/${sessionId}/events`);
    const turn = await call(p.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'go' }] });
    const turnId = turn.body.turnId as string;
    await sse.nextUpdate('tool_call_started');

    p.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    await sse.ended;
    expect(sse.updates.map((u) => u.update.type)).not.toContain('turn_finished');
    await p.closed;
    expect(logMessages(p.stderr()).at(-1)).toBe('stopped');
    const storage = sqliteStorage({ filename: db.file });
    try {
      expect(await storage.getTurn(turnId)).toMatchObject({ status: 'running' });
      expect((await storage.listMessages(sessionId)).filter((m) => m.message.role === 'tool')).toEqual([]);
    } finally {
      await storage.close();
    }
    // The command the tool ran was stopped with the host.
    expect(spawnSync('pgrep', ['-f', marker]).status).toBe(1);

    const after = path.join(workspace, 'after.json');
    await writeFile(after, JSON.stringify([{ text: 'the command was stopped by the deploy' }]));
    const next = await spawnHost(['--db', db.file, '--workspace', workspace, '--model', `scripted:${after}`]);
    processes.push(next);
    try {
      const state = await call(next.url, 'GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`);
      expect(state.body).toMatchObject({ status: 'completed', outcome: { finalText: 'the command was stopped by the deploy' } });
    } finally {
      next.kill('SIGTERM');
      await next.exited;
      await db.drop();
    }
  });

  it('refuses bad flags, an unknown model and a public bind without a token, before listening', () => {
    const badPort = runCli(['serve', '--port', 'eighty']);
    expect(badPort.status).toBe(2);
    expect(badPort.stderr).toContain('port');
    const unknownFlag = runCli(['serve', '--bogus']);
    expect(unknownFlag.status).toBe(2);
    const model = runCli(['serve', '--port', '0', '--db', ':memory:', '--model', 'magic:thing']);
    expect(model.status).toBe(1);
    expect(model.stderr).toContain("unknown --model 'magic:thing'");
    const open = runCli(['serve', '--port', '0', '--db', ':memory:', '--host', '0.0.0.0']);
    expect(open.status).toBe(1);
    expect(open.stderr).toContain('without authentication');
    expect(open.stdout).not.toContain('listening');
  });

  it('refuses a broker URL that is not one, and does not start without the broker it names', () => {
    const notAmqp = runCli(['serve', '--port', '0', '--db', ':memory:', '--amqp-url', 'http://127.0.0.1:5672']);
    expect(notAmqp.status).toBe(2);
    expect(notAmqp.stderr).toContain('amqp://');
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    const away = runCli(['serve', '--port', '0', '--db', ':memory:'], { TURNCHART_AMQP_URL: 'amqp://guest:secret@127.0.0.1:1' });
    expect(away.status).toBe(1);
    expect(away.stderr).toContain('RabbitMQ at amqp://guest:***@127.0.0.1:1 cannot be reached');
    expect(away.stdout + away.stderr).not.toContain('secret');
    expect(away.stdout).not.toContain('listening');
  });
});
