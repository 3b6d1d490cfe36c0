import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dropPostgresSchema, POSTGRES_TWINS, POSTGRES_URL, sqliteFile } from '../support/databases.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { SseClient } from '../support/sse-client.js';
import { useTempDirs } from '../support/workspace.js';

const tempDir = useTempDirs('turnchart-owner-');

interface Target {
  name: string;
  skip: boolean;
  /** The storage flags of a host process on one shared database, and how to remove it. */
  create(): { args: string[]; drop(): Promise<void> };
}

const targets: Target[] = [
  {
    name: 'one SQLite file',
    skip: false,
    create: () => {
      const db = sqliteFile();
      return { args: ['--db', db.file], drop: db.drop };
    },
  },
  // The PostgreSQL twin runs in the full tier (test/support/tier.ts).
  ...(POSTGRES_TWINS ? [
    {
      name: 'one PostgreSQL database',
      skip: false,
      create: () => {
        const schema = `tc_own_${randomUUID().replaceAll('-', '')}`;
        const url = new URL(POSTGRES_URL!);
        url.searchParams.set('schema', schema);
        return { args: ['--database-url', url.toString()], drop: () => dropPostgresSchema(POSTGRES_URL!, schema) };
      },
    },
  ] : []),
];

/** Model scripts for the host processes: the first host's turn runs a command that lasts until it is killed; the second's answer. */
async function scripts(dir: string, marker: string): Promise<{ first: string; second: string }> {
  const first = path.join(dir, 'first-model.json');
  const second = path.join(dir, 'second-model.json');
  await writeFile(first, JSON.stringify([{ text: 'working', toolCalls: [{ name: 'run_command', args: { command: `sleep 600 # ${marker}` } }] }]));
  await writeFile(second, JSON.stringify([{ text: 'answer one' }, { text: 'answer two' }]));
  return { first, second };
}

async function waitForTurn(url: string, sessionId: string, turnId: string) {
  for (;;) {
    const state = await call(url, 'GET', `/sessions/${sessionId}/turns/${turnId}?wait=30`);
    if (state.status !== 200 || (state.body.status !== 'running' && state.body.status !== 'queued')) return state;
  }
}

describe.each(targets)('one owner per session: two host processes on $name', { timeout: 60_000 }, ({ skip, create }) => {
  const processes: HostProcess[] = [];
  let drop: (() => Promise<void>) | undefined;
  let marker = '';
  afterEach(async () => {
    for (const p of processes.splice(0)) {
      p.kill('SIGKILL');
      await p.exited;
    }
    // The command a killed host left running is an orphan now: end it.
    await import('node:child_process').then(({ execFileSync }) => {
      try {
        execFileSync('pkill', ['-f', marker]);
      } catch {
        // none left
      }
    });
    await drop?.();
    drop = undefined;
  });

  const start = async (args: string[], env: Record<string, string> = {}) => {
    const p = await spawnHost(args, env);
    processes.push(p);
    return p;
  };

  it.skipIf(skip)('refuses a session another live host holds (409, nothing changed); after the holder is killed -9, corrects its turn and takes it over', async () => {
    const db = create();
    drop = db.drop;
    const workspace = await tempDir();
    marker = `turnchart-test-${randomUUID()}`;
    const model = await scripts(workspace, marker);
    // RT-24 as it stays without resuming (issue 26's resume across hosts: test/reliability/turn-chaos.test.ts).
    const common = [...db.args, '--workspace', workspace, '--resume-turns', 'off'];
    const a = await start([...common, '--model', `scripted:${model.first}`]);
    const b = await start([...common, '--model', `scripted:${model.second}`]);

    const sessionId = (await call(a.url, 'POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
    const updates = await SseClient.connect(`${a.url}/sessions/${sessionId}/events`);
    const running = await call(a.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'same', input: [{ type: 'text', text: 'long job' }] });
    expect(running).toMatchObject({ status: 202, body: { status: 'running' } });
    // The 202 comes once the user message is stored; A goes on to write the world-state messages and its
    // answer, and only then starts the tool call. From there A writes nothing until the command ends,
    // which it never does: what A stored is then complete, to compare with what B finds after the takeover.
    await updates.nextUpdate('tool_call_started');
    updates.close();

    // B refuses every request for the session while A lives, and changes nothing.
    expect(await call(b.url, 'GET', `/sessions/${sessionId}`)).toMatchObject({ status: 409, body: { error: { code: 'SessionOwnedElsewhere' } } });
    const duplicate = await call(b.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'same', input: [{ type: 'text', text: 'long job' }] });
    expect(duplicate).toMatchObject({ status: 409, body: { error: { code: 'SessionOwnedElsewhere' } } });
    expect((await call(a.url, 'GET', `/sessions/${sessionId}/turns/${running.body.turnId as string}`)).body.status).toBe('running');
    const messagesBefore = (await call(a.url, 'GET', `/sessions/${sessionId}/messages`)).body.messages as unknown[];
    expect(messagesBefore.at(-1)).toMatchObject({ message: { role: 'assistant', toolCalls: [{ name: 'run_command' }] } });

    a.kill('SIGKILL');
    await a.exited;
    // A's process is gone: B, on the same host, takes the session at once and corrects the turn A left running.
    const taken = await call(b.url, 'GET', `/sessions/${sessionId}`);
    expect(taken.status).toBe(200);
    expect(await call(b.url, 'GET', `/sessions/${sessionId}/turns/${running.body.turnId as string}`)).toMatchObject({
      status: 200,
      body: { status: 'interrupted' },
    });
    // Nothing A stored was lost or repeated; the request A accepted is still answered with A's turn.
    const messagesAfter = (await call(b.url, 'GET', `/sessions/${sessionId}/messages`)).body.messages as unknown[];
    expect(messagesAfter).toEqual(messagesBefore);
    expect(await call(b.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'same', input: [{ type: 'text', text: 'long job' }] })).toMatchObject({
      status: 202,
      body: { turnId: running.body.turnId, status: 'interrupted' },
    });
    const next = await call(b.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'next', input: [{ type: 'text', text: 'hello?' }] });
    expect(next.status).toBe(202);
    const ended = await waitForTurn(b.url, sessionId, next.body.turnId as string);
    expect(ended.body).toMatchObject({ status: 'completed' });
  });

  it.skipIf(skip)('waits out the lease of a holder on another host, then takes the session over', async () => {
    const db = create();
    drop = db.drop;
    const workspace = await tempDir();
    marker = `turnchart-test-${randomUUID()}`;
    const model = await scripts(workspace, marker);
    const common = [...db.args, '--workspace', workspace, '--lease-ttl', '1', '--resume-turns', 'off'];
    // A claims to run on another machine: B cannot see whether its process lives, only its lease.
    const a = await start([...common, '--model', `scripted:${model.first}`, '--owner-host', 'elsewhere.example']);
    const b = await start([...common, '--model', `scripted:${model.second}`]);
    const sessionId = (await call(a.url, 'POST', '/sessions', { permissionMode: 'auto' })).body.sessionId as string;
    const running = await call(a.url, 'POST', `/sessions/${sessionId}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'long job' }] });
    a.kill('SIGKILL');
    await a.exited;
    const refusedAt = Date.now();
    expect((await call(b.url, 'GET', `/sessions/${sessionId}`)).status).toBe(409);
    let taken = await call(b.url, 'GET', `/sessions/${sessionId}`);
    while (taken.status === 409) {
      // The lease runs on the database's clock; asking again is how a client learns it has run out.
      await new Promise((resolve) => setTimeout(resolve, 100));
      taken = await call(b.url, 'GET', `/sessions/${sessionId}`);
    }
    expect(taken.status).toBe(200);
    expect(Date.now() - refusedAt).toBeLessThan(10_000);
    expect((await call(b.url, 'GET', `/sessions/${sessionId}/turns/${running.body.turnId as string}`)).body.status).toBe('interrupted');
  });
});
