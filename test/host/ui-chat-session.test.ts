import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { serve, serveSettings } from '../../src/cli/serve.js';
import { createLogger } from '../../src/host/logger.js';
import type { RunningHost } from '../../src/host/host.js';
import { createRuntime, scriptedModel, sqliteStorage } from '../../src/index.js';
import { call } from '../support/host.js';
import { fold, toolParts, UiChatClient, userMessage } from '../support/ui-chat-client.js';

describe('sessions named by the caller', () => {
  it('createSession takes an id, and a taken or invalid one is a typed error', async () => {
    const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([]) });
    try {
      const session = await runtime.createSession({ id: 'chat-1', permissionMode: 'auto' });
      expect(session.id).toBe('chat-1');
      expect(session.snapshot()).toMatchObject({ sessionId: 'chat-1', permissionMode: 'auto' });
      await expect(runtime.createSession({ id: 'chat-1' })).rejects.toMatchObject({ code: 'SessionExists' });
      await expect(runtime.createSession({ id: 'bad\0id' })).rejects.toMatchObject({ code: 'InvalidInput' });
      await expect(runtime.createSession({ id: '' })).rejects.toMatchObject({ code: 'InvalidInput' });
      // A closed session's id stays taken: it is still in storage.
      await session.close();
      await expect(runtime.createSession({ id: 'chat-1' })).rejects.toMatchObject({ code: 'SessionExists' });
    } finally {
      await runtime.shutdown();
    }
  });
});

describe('turnchart serve --permission-mode', () => {
  let dir: string | undefined;
  let host: RunningHost | undefined;
  afterEach(async () => {
    await host?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    host = undefined;
    dir = undefined;
  });

  async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunningHost> {
    dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-ui-mode-'));
    const script = path.join(dir, 'script.json');
    await writeFile(script, JSON.stringify([{ text: 'writing', toolCalls: [{ name: 'write_file', args: { path: 'n.md', content: 'x' } }] }, { text: 'wrote it' }]));
    const settings = serveSettings(['--port', '0', '--db', path.join(dir, 'db.sqlite'), '--workspace', dir, '--model', `scripted:${script}`, ...args], env);
    return serve(settings, createLogger({ name: 'turnchart', format: 'json', level: 'silent' }));
  }

  it('makes first-use chat sessions auto: a write runs without an approval', async () => {
    host = await start(['--permission-mode', 'auto']);
    const { message, types } = await fold(await new UiChatClient(host.url, 'chat-auto').send([userMessage('u1', 'write a note')]));
    expect(types).not.toContain('tool-approval-request');
    expect(toolParts(message)).toEqual([expect.objectContaining({ type: 'tool-write_file', state: 'output-available' })]);
    expect((await call(host.url, 'GET', '/sessions/chat-auto')).body).toMatchObject({ permissionMode: 'auto' });
  });

  it('is read from TURNCHART_PERMISSION_MODE too, also for POST /sessions without a mode, and is validated', async () => {
    expect(() => serveSettings(['--permission-mode', 'yolo'], {})).toThrow(/permission-mode/);
    expect(() => serveSettings([], { TURNCHART_PERMISSION_MODE: 'sometimes' })).toThrow(/permission-mode/);
    host = await start([], { TURNCHART_PERMISSION_MODE: 'read_only' });
    const created = await call(host.url, 'POST', '/sessions', {});
    expect(created.body).toMatchObject({ snapshot: { permissionMode: 'read_only' } });
    const explicit = await call(host.url, 'POST', '/sessions', { permissionMode: 'ask' });
    expect(explicit.body).toMatchObject({ snapshot: { permissionMode: 'ask' } });
  });

  it('two first requests of one chat make one session: one turn runs, the other is refused Busy', async () => {
    host = await start([]);
    const client = new UiChatClient(host.url, 'chat-race');
    const outcomes = await Promise.allSettled([client.send([userMessage('u1', 'one')]), client.send([userMessage('u2', 'two')])]);
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect(String((refused[0] as PromiseRejectedResult).reason)).toContain('Busy');
    const streamed = outcomes.find((o) => o.status === 'fulfilled')!;
    await fold(streamed.value);
    const sessions = await call(host.url, 'GET', '/sessions');
    expect((sessions.body.sessions as { sessionId: string }[]).map((s) => s.sessionId)).toEqual(['chat-race']);
  });
});
