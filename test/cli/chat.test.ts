import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteStorage } from '../../src/index.js';
import { sqliteFile } from '../support/databases.js';
import { call } from '../support/host.js';
import { spawnHost, type HostProcess } from '../support/host-process.js';
import { useTempDirs } from '../support/workspace.js';
import { killMarked, running, spawnChat, until, type ChatProcess } from './chat-process.js';

const tempDir = useTempDirs('turnchart-chat-');

/** A scripted model file in a fresh workspace. */
async function workspaceWith(script: unknown[]): Promise<{ workspace: string; model: string }> {
  const workspace = await tempDir();
  const model = path.join(workspace, '.model.json');
  await writeFile(model, JSON.stringify(script));
  return { workspace, model: `scripted:${model}` };
}

function sessionIdIn(output: string): string {
  const id = /session (ses_\S+)/.exec(output)?.[1];
  if (!id) throw new Error(`no session id in:\n${output}`);
  return id;
}

describe('turnchart chat against a running host', { timeout: 120_000 }, () => {
  const hosts: HostProcess[] = [];
  const chats: ChatProcess[] = [];
  const databases: { drop(): Promise<void> }[] = [];
  const markers: string[] = [];
  afterEach(async () => {
    for (const marker of markers.splice(0)) killMarked(marker);
    for (const chat of chats.splice(0)) {
      chat.kill();
      await chat.exited;
    }
    for (const host of hosts.splice(0)) {
      host.kill('SIGKILL');
      await host.exited;
    }
    await Promise.all(databases.splice(0).map((db) => db.drop()));
  });

  async function host(script: unknown[], args: string[] = []) {
    const { workspace, model } = await workspaceWith(script);
    const db = sqliteFile();
    databases.push(db);
    const h = await spawnHost(['--db', db.file, '--workspace', workspace, '--model', model, ...args]);
    hosts.push(h);
    return { ...h, workspace };
  }

  function chat(args: string[], env: Record<string, string> = {}): ChatProcess {
    const c = spawnChat(args, env);
    chats.push(c);
    return c;
  }

  it('streams a turn, asks for the approval and, answered "allow once", the tool runs', async () => {
    const h = await host([
      { text: 'I will write the note.', toolCalls: [{ name: 'write_file', args: { path: 'chat-note.md', content: 'written from the chat' } }] },
      { text: 'Done: the note is written.' },
    ]);
    const c = chat(['--url', h.url]);
    await c.waitFor('› ');
    expect(c.output()).toContain('(new, mode ask)');
    c.send('please write a note');
    await c.waitFor('[a]llow once / [d]eny');
    const before = c.output();
    expect(before).toContain('I will write the note.');
    expect(before).toMatch(/▸ write_file {2}chat-note\.md, content: written from the chat/);
    expect(before).toContain('? write_file needs your approval: chat-note.md');
    expect(before).not.toContain('completed');

    const mark = c.mark();
    c.send('a');
    await c.waitFor('✓ completed', mark);
    const after = c.output().slice(mark);
    expect(after).toContain('allowed once');
    expect(after).toContain('✓ write_file succeeded');
    expect(after).toContain('Done: the note is written.');
    expect(await readFile(path.join(h.workspace, 'chat-note.md'), 'utf8')).toBe('written from the chat');
    // Not a terminal: plain lines, no spinner, no escape codes.
    expect(c.output()).not.toContain('\u001b[');
    expect(c.output()).not.toContain('thinking…');

    c.send('/exit');
    expect(await c.exited).toBe(0);
  });

  it('Ctrl+C cancels the turn while its tool runs: the command is killed and the turn ends cancelled', async () => {
    const marker = `turnchart-chat-${randomUUID()}`;
    markers.push(marker);
    const plan = { explanation: 'one long step', plan: [{ step: 'run the command', status: 'in_progress' }, { step: 'report', status: 'pending' }] };
    const h = await host([
      {
        reasoning: 'The user wants the long command.',
        text: 'Running it.',
        toolCalls: [
          { name: 'update_plan', args: plan },
          { name: 'run_command', args: { command: `sleep 600 # ${marker}` } },
        ],
      },
    ]);
    const c = chat(['--url', h.url, '--mode', 'auto']);
    await c.waitFor('› ');
    const sessionId = sessionIdIn(c.output());
    c.send('run the long command');
    await c.waitFor(`▸ run_command  sleep 600 # ${marker}`);
    await until(() => running(marker), 'the command to start');
    // Reasoning (marked, as styles are off), the text, the plan as it arrives, then the command.
    expect(c.output()).toContain(
      ['(reasoning) The user wants the long command.', 'Running it.', '▸ update_plan  explanation: one long step, plan: 2 items', 'Plan — one long step', '  ▶ run the command', '  ○ report', '  ✓ update_plan succeeded'].join('\n'),
    );

    const mark = c.mark();
    c.interrupt();
    await c.waitFor('✗ cancelled', mark);
    expect(c.output().slice(mark)).toContain('✗ run_command cancelled');
    const snapshot = await call(h.url, 'GET', `/sessions/${sessionId}`);
    const runtime = snapshot.body.runtime as { kind: string; turnId: string; outcome: { status: string } };
    expect(runtime).toMatchObject({ kind: 'terminal', outcome: { status: 'cancelled' } });
    expect(await call(h.url, 'GET', `/sessions/${sessionId}/turns/${runtime.turnId}`)).toMatchObject({ status: 200, body: { status: 'cancelled' } });
    // The turn ends at once; the command dies as its signal reaches it (SIGTERM now, SIGKILL after the
    // 2 s grace): on a loaded machine that can be a moment after the turn's end is read back.
    await until(() => !running(marker), 'the command to be killed', 5_000);

    // The chat goes on: the prompt is back, and it leaves when asked.
    await c.waitFor('› ', mark);
    c.send('/exit');
    expect(await c.exited).toBe(0);
  });

  it('/mode, /context, /sessions and errors, with the URL and token from the environment; Ctrl+C twice when idle exits', async () => {
    const h = await host([], ['--token', 'chat-secret']);
    const auth = { authorization: 'Bearer chat-secret' };
    const c = chat([], { TURNCHART_URL: h.url, TURNCHART_TOKEN: 'chat-secret' });
    await c.waitFor('› ');
    const sessionId = sessionIdIn(c.output());

    let mark = c.mark();
    c.send('/mode auto');
    await c.waitFor('mode: auto', mark);
    expect((await call(h.url, 'GET', `/sessions/${sessionId}`, undefined, auth)).body).toMatchObject({ permissionMode: 'auto' });
    c.send('/mode sideways');
    await c.waitFor('usage: /mode ask|auto|read_only', mark);
    c.send('/mode');
    await c.waitFor(/^mode: auto$/m, mark);

    mark = c.mark();
    c.send('/context');
    const bar = await c.waitFor(/context [█▓▒░·│]{50} [\d.]+% of the auto-compact line/, mark);
    expect(bar).toContain('│');
    await c.waitFor('window', mark);
    const context = (await call(h.url, 'GET', `/sessions/${sessionId}/context`, undefined, auth)).body as {
      budget: { systemContextTokens: number; toolSurfaceTokens: number };
      autoCompactTokenLimit: number;
    };
    const shown = c.output().slice(mark);
    expect(shown).toContain(`system ${context.budget.systemContextTokens.toLocaleString('en-US')}`);
    expect(shown).toContain(`tools ${context.budget.toolSurfaceTokens.toLocaleString('en-US')}`);
    expect(shown).toContain(`auto-compact at ${context.autoCompactTokenLimit.toLocaleString('en-US')} of a 128,000-token window`);

    mark = c.mark();
    c.send('/sessions');
    await c.waitFor(`* ${sessionId}`, mark);
    expect(c.output().slice(mark)).toContain('default, auto, idle');

    // Every refusal is one line with its code.
    mark = c.mark();
    c.send('/open ses_nobody');
    await c.waitFor(/^error \[UnknownSession\] no session 'ses_nobody'$/m, mark);
    c.send('/compact');
    await c.waitFor(/^error \[NothingToCompact\] there is nothing new to compact$/m, mark);

    mark = c.mark();
    c.interrupt();
    await c.waitFor('(Ctrl+C again or Ctrl+D to exit)', mark);
    c.interrupt();
    expect(await c.exited).toBe(0);
  });
});

describe('turnchart chat embedded on a SQLite file', { timeout: 120_000 }, () => {
  it('streams the answer as it comes, before the turn ends, and keeps the conversation in the file', async () => {
    const { workspace, model } = await workspaceWith([
      { text: 'Streaming this answer word by word before I ask.', toolCalls: [{ name: 'write_file', args: { path: 'no.md', content: 'x' } }] },
    ]);
    const dbFile = path.join(workspace, 'db', 'chat.db');
    const c = spawnChat(['--db', dbFile, '--workspace', workspace, '--model', model]);
    try {
      await c.waitFor('› ');
      expect(c.output()).toContain(`embedded on ${dbFile}`);
      const sessionId = sessionIdIn(c.output());
      c.send('hello');
      // The text is on screen while the turn still waits for the approval.
      await c.waitFor('[a]llow once / [d]eny');
      expect(c.output()).toContain('Streaming this answer word by word before I ask.');
      const mark = c.mark();
      c.send('d');
      await c.waitFor('✗ failed [permission_denied]', mark);
      expect(c.output().slice(mark)).toContain('✗ write_file denied');
      c.endInput();
      expect(await c.exited).toBe(0);

      const storage = sqliteStorage({ filename: dbFile });
      try {
        const [turn] = await storage.listTurns(sessionId);
        expect(turn).toMatchObject({ status: 'failed', errorCode: 'permission_denied' });
        const assistant = (await storage.listMessages(sessionId)).find((m) => m.message.role === 'assistant');
        expect(assistant?.message).toMatchObject({ text: 'Streaming this answer word by word before I ask.' });
      } finally {
        await storage.close();
      }
    } finally {
      c.kill();
      await c.exited;
    }
  });

  it('ends a script after its turn: the end of the input is not an error, and no prompt follows it (issue 29)', async () => {
    const { workspace, model } = await workspaceWith([{ text: 'Hello back.' }]);
    const c = spawnChat(['--db', path.join(workspace, 'chat.db'), '--workspace', workspace, '--model', model]);
    // The whole script, its end included, before the session is even open: `printf 'hello\n/context\n' | turnchart chat`.
    c.send('hello');
    c.send('/context');
    c.endInput();
    expect(await c.exited).toBe(0);
    const output = c.output();
    expect(output).toMatch(/› hello\nHello back\.\n✓ completed\n› \/context\ncontext [█▓▒░·│]{50} [\d.]+% of the auto-compact line\n/);
    expect(output).toMatch(/auto-compact at [\d,]+ of a [\d,]+-token window \(input [\d,]+\)\n$/);
    expect(output).not.toContain('error');
  });

  it('ends a script whose input ends at an approval, saying so; the embedded turn stops with the chat', async () => {
    const { workspace, model } = await workspaceWith([{ text: 'Writing it.', toolCalls: [{ name: 'write_file', args: { path: 'never.md', content: 'x' } }] }]);
    const c = spawnChat(['--db', path.join(workspace, 'chat.db'), '--workspace', workspace, '--model', model]);
    c.send('write it');
    c.endInput();
    expect(await c.exited).toBe(0);
    expect(c.output()).toMatch(
      // No approval prompt: nothing is left to answer it.
      /\? write_file needs your approval: never\.md\nthe input ended with an approval pending\nthe running turn \S+ ends with this process \(actor_stopped\)\n$/,
    );
    expect(existsSync(path.join(workspace, 'never.md'))).toBe(false);
  });

  it('continues a stored session with --session, and reads a script from a pipe to the end', async () => {
    const { workspace, model } = await workspaceWith([{ text: 'First answer.' }, { text: 'Second answer.' }]);
    const dbFile = path.join(workspace, 'chat.db');
    const first = spawnChat(['--db', dbFile, '--workspace', workspace, '--model', model]);
    first.send('one');
    first.endInput();
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('First answer.');
    const sessionId = sessionIdIn(first.output());

    // A fresh process: the script starts over, so its first reply answers again — in the same session.
    const second = spawnChat(['--db', dbFile, '--workspace', workspace, '--model', model, '--session', sessionId]);
    second.send('two');
    second.send('/sessions');
    second.endInput();
    expect(await second.exited).toBe(0);
    expect(second.output()).toContain(`session ${sessionId} (continued, mode ask)`);
    expect(second.output()).toMatch(/First answer\.\n✓ completed\n› \/sessions\n\* ses_/);
    const storage = sqliteStorage({ filename: dbFile });
    try {
      expect((await storage.listTurns(sessionId)).map((t) => t.status)).toEqual(['completed', 'completed']);
    } finally {
      await storage.close();
    }
  });
});
