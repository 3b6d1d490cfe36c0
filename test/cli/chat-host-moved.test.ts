import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HOST_MOVED } from '../../src/cli/chat-render.js';
import { sqliteFile } from '../support/databases.js';
import { sse, startFakeOpenAiServer, type FakeOpenAiServer } from '../support/fake-openai-server.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { useTempDirs } from '../support/workspace.js';
import { spawnChat, type ChatProcess } from './chat-process.js';

const tempDir = useTempDirs('turnchart-chat-moved-');

/** How often `text` occurs in `output`. */
function count(output: string, text: string): number {
  return output.split(text).length - 1;
}

/**
 * Issue 26: `turnchart chat --url` while its host goes away and comes back on the same address (a
 * restart, or another host behind the same load balancer). The chat says so in one line and goes
 * on: its event stream and its requests are retried against the same URL, and the turn it was
 * showing goes on where it stopped.
 */
describe('turnchart chat when its host goes away and comes back', { timeout: 120_000 }, () => {
  const hosts: HostProcess[] = [];
  const chats: ChatProcess[] = [];
  const cleanup: (() => Promise<void>)[] = [];
  let server: FakeOpenAiServer | undefined;
  afterEach(async () => {
    for (const chat of chats.splice(0)) {
      chat.kill();
      await chat.exited;
    }
    for (const host of hosts.splice(0)) {
      host.kill('SIGKILL');
      await host.exited;
    }
    await server?.close();
    server = undefined;
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function start(args: string[], port?: string): Promise<HostProcess> {
    const host = await spawnHost([...args, ...(port ? ['--port', port] : [])]);
    hosts.push(host);
    return host;
  }

  async function stop(host: HostProcess, signal: NodeJS.Signals): Promise<void> {
    host.kill(signal);
    await host.exited;
    hosts.splice(hosts.indexOf(host), 1);
  }

  function chat(args: string[]): ChatProcess {
    const c = spawnChat(args);
    chats.push(c);
    return c;
  }

  /**
   * A host on a SQLite file whose provider outlives it; `answers` are the provider's, in order. One
   * of them stops after a few words and hangs: the host is killed there, while it streams.
   */
  async function hostWithProvider(answers: Parameters<typeof startFakeOpenAiServer>[0]): Promise<{ host: HostProcess; common: string[] }> {
    server = await startFakeOpenAiServer(answers);
    const db = sqliteFile();
    cleanup.push(() => db.drop());
    const workspace = await tempDir();
    const common = ['--db', db.file, '--workspace', workspace, '--model', `openai-compatible:${server.baseUrl}#fake-model`];
    return { host: await start(common), common };
  }

  /** Sends `line`, kills the host once `killAt` shows, starts it again on its port, and waits for the turn's end; the output from the line on. */
  async function killedMidTurn(host: HostProcess, common: string[], line: string, killAt: string): Promise<{ c: ChatProcess; shown: string }> {
    const c = chat(['--url', host.url, '--mode', 'auto']);
    await c.waitFor('› ');
    const mark = c.mark();
    c.send(line);
    await c.waitFor(killAt, mark);
    await stop(host, 'SIGKILL');
    await c.waitFor(HOST_MOVED, mark);
    await start(common, new URL(host.url).port);
    await c.waitFor('✓ completed', mark);
    return { c, shown: c.output().slice(mark) };
  }

  it('SIGKILLed while the model streams and restarted on the same port and database: one line, then the turn\'s final answer', async () => {
    const { host, common } = await hostWithProvider([
      { chunks: sse.reply({ text: 'Looking into it' }).slice(0, -1), stall: true },
      { chunks: sse.reply({ text: 'All done after the restart.' }) },
    ]);
    const { c, shown } = await killedMidTurn(host, common, 'look into it', 'Looking into it');
    expect(shown).toMatch(/^look into it\nLooking into it\nthe host moved; resuming\nAll done after the restart\.\n✓ completed\n/);
    expect(count(shown, HOST_MOVED)).toBe(1);
    expect(shown).not.toMatch(/error|reconnect|caught up|a turn is running/);
    expect(server!.requests).toHaveLength(2);
    c.send('/exit');
    expect(await c.exited).toBe(0);
  });

  it('SIGKILLed after a tool step, while the next answer streams: the step is not shown again, nor run again', async () => {
    const { host, common } = await hostWithProvider([
      { chunks: sse.reply({ text: 'Checking the workspace.', calls: [{ id: 'call_ls', name: 'list_dir', arguments: '{"path":"."}' }] }) },
      { chunks: sse.reply({ text: 'Half an ans' }).slice(0, -1), stall: true },
      { chunks: sse.reply({ text: 'All done after the restart.' }) },
    ]);
    const { c, shown } = await killedMidTurn(host, common, 'look around', 'Half an ans');
    expect(shown).toMatch(/^look around\nChecking the workspace\.\n▸ list_dir {2}\.\n {2}✓ list_dir succeeded\nHalf an ans\nthe host moved; resuming\nAll done after the restart\.\n✓ completed\n/);
    expect(count(shown, HOST_MOVED)).toBe(1);
    expect(count(shown, 'Checking the workspace.')).toBe(1);
    expect(count(shown, 'list_dir succeeded')).toBe(1);
    expect(shown).not.toMatch(/error|reconnect|caught up|a turn is running/);
    // The resumed turn asked the model once more, and only that.
    expect(server!.requests).toHaveLength(3);
    c.send('/exit');
    expect(await c.exited).toBe(0);
  });

  it('stopped while idle: a command typed meanwhile waits for the host to be back, then answers, and the chat goes on', async () => {
    const db = sqliteFile();
    cleanup.push(() => db.drop());
    const workspace = await tempDir();
    const script = path.join(workspace, 'model.json');
    await writeFile(script, JSON.stringify([{ text: 'Back again.' }]));
    const common = ['--db', db.file, '--workspace', workspace, '--model', `scripted:${script}`];
    const first = await start(common);

    const c = chat(['--url', first.url]);
    await c.waitFor('› ');
    const mark = c.mark();
    await stop(first, 'SIGTERM');
    await c.waitFor(HOST_MOVED, mark);
    c.send('/context');
    await c.waitFor('› /context', mark);
    await start(common, new URL(first.url).port);

    await c.waitFor(/context [█▓▒░·│]{50} [\d.]+% of the auto-compact line/, mark);
    c.send('hello');
    await c.waitFor('✓ completed', mark);
    const shown = c.output().slice(mark);
    expect(shown).toContain('Back again.');
    expect(count(shown, HOST_MOVED)).toBe(1);
    expect(shown).not.toMatch(/error|reconnect|caught up/);

    c.send('/exit');
    expect(await c.exited).toBe(0);
  });
});
