import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { principalDirName } from '../../src/tools/workspace/user-directory.js';
import { scriptedModel, workspaceTools, type ScriptedStep } from '../../src/index.js';
import type { ModelRequest } from '../../src/protocol/model.js';
import { sqliteFile } from '../support/databases.js';
import { useTestHosts, type TestHost } from '../support/host.js';
import { fold, texts, UiChatClient, userMessage } from '../support/ui-chat-client.js';

/**
 * Many users on one host: each principal's sessions work in a directory of their own beneath the
 * host's workspace, so one user's agent neither reads, lists nor changes another's files — through
 * the file tools (in-process path checks) or through a command (the sandbox shows the user's
 * directory alone). An admin works in the whole workspace. Real HTTP, real SQLite, real JWTs, and
 * real bubblewrap where it is usable.
 */

const SECRET = 'principal-workspaces-secret-0123456789abcdef';
const bwrap = workspaceTools({ root: os.tmpdir(), warn: () => undefined }).find((tool) => tool.name === 'run_command')!.sandbox?.kind === 'bwrap';

const token = (sub: string, roles: string[] = []) =>
  new SignJWT({ roles, exp: Math.floor(Date.now() / 1000) + 3600 }).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).sign(new TextEncoder().encode(SECRET));
const call = (name: string, args: Record<string, unknown>, id: string) => ({ id, name, args });
const require = createRequire(import.meta.url);
/** The host's workspace, as the model reads it in the session's world state: the admin's view names it, a user's (own directory) ends in it. */
const workspaceOf = (request: ModelRequest): string => {
  const context = request.messages.find((m) => m.role === 'user' && m.text.startsWith('<user_project_context')) as { text: string } | undefined;
  const dir = /working_directory: (.+)/.exec(context?.text ?? '')?.[1];
  if (dir === undefined) throw new Error('no working directory in the request');
  return path.dirname(path.dirname(dir));
};

const openHost = useTestHosts();

/** Runs one turn as `headers`'s principal in a new session (mode auto); the tool results by call id. */
async function turnAs(h: TestHost, headers: Record<string, string>): Promise<Map<string, { status: string; content: string }>> {
  const created = await h.call('POST', '/sessions', { permissionMode: 'auto' }, headers);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.sessionId as string;
  const turn = await h.call('POST', `/sessions/${id}/turns`, { clientRequestId: 'r1', input: [{ type: 'text', text: 'go' }] }, headers);
  expect(turn.status, JSON.stringify(turn.body)).toBe(202);
  const state = await h.call('GET', `/sessions/${id}/turns/${turn.body.turnId as string}?wait=30`, undefined, headers);
  expect(state.body.status).toBe('completed');
  const page = await h.call('GET', `/sessions/${id}/messages?limit=200`, undefined, headers);
  const results = new Map<string, { status: string; content: string }>();
  for (const { message } of page.body.messages as { message: { role: string; toolCallId?: string; status?: string; content?: string } }[]) {
    if (message.role === 'tool') results.set(message.toolCallId!, { status: message.status!, content: message.content! });
  }
  return results;
}

describe('a user of a shared host works in a directory of their own', () => {
  it("reads, lists, searches and writes only there; an admin sees every user's", async () => {
    const alice = principalDirName('alice');
    const bob = principalDirName('bob');
    const steps: ScriptedStep[] = [
      // alice
      { toolCalls: [call('write_file', { path: 'notes/secret.md', content: 'alice only' }, 'a1')] },
      { text: 'ok' },
      // bob
      {
        toolCalls: [
          call('list_dir', {}, 'b1'),
          call('list_dir', { path: '..' }, 'b2'),
          call('read_file', { path: `../${alice}/notes/secret.md` }, 'b3'),
          call('write_file', { path: `../${alice}/notes/secret.md`, content: 'bob was here' }, 'b4'),
          call('grep', { pattern: 'alice only' }, 'b5'),
          call('write_file', { path: 'mine.md', content: 'bob' }, 'b6'),
        ],
      },
      { text: 'ok' },
      // the admin
      { toolCalls: [call('list_dir', { path: 'users' }, 'r1'), call('read_file', { path: `users/${alice}/notes/secret.md` }, 'r2')] },
      { text: 'ok' },
    ];
    const model = scriptedModel(steps);
    const warnings: string[] = [];
    const host = await openHost(sqliteFile(), model, { jwt: { keys: { secret: SECRET } }, sandbox: 'off', warn: (line) => warnings.push(line) });
    // Commands are kept apart by the sandbox alone: a host of many users without one says so at start.
    expect(warnings).toContain(
      "many users and no sandbox (the operator turned the sandbox off): each user's commands can read and change every other user's files; run with --sandbox bwrap",
    );
    // The host's workspace is a repository of the operator's: its layout is not named to a user's model.
    await mkdir(path.join(host.workspace, '.git'));
    await writeFile(path.join(host.workspace, 'operator-plan.md'), 'the operator\'s');
    const projectContext = (request: number) =>
      model.requests[request]!.messages.find((m) => m.role === 'user' && m.text.startsWith('<user_project_context'))! as { text: string };
    const as = async (sub: string, roles?: string[]) => ({ authorization: `Bearer ${await token(sub, roles)}` });

    expect((await turnAs(host, await as('alice'))).get('a1')).toMatchObject({ status: 'succeeded' });
    const aliceFile = path.join(host.workspace, 'users', alice, 'notes', 'secret.md');
    expect(await readFile(aliceFile, 'utf8')).toBe('alice only');
    expect(projectContext(0).text).toContain('repository_root: none');
    expect(projectContext(0).text).not.toContain('operator-plan.md');

    const seen = await turnAs(host, await as('bob'));
    expect(seen.get('b1')).toEqual({ status: 'succeeded', content: '(. is empty)' });
    for (const id of ['b2', 'b3', 'b4']) expect(seen.get(id)?.status, id).toBe('denied');
    expect(seen.get('b5')?.content).not.toContain('alice only');
    expect(seen.get('b6')?.status).toBe('succeeded');
    expect(await readFile(aliceFile, 'utf8')).toBe('alice only');
    expect(await readFile(path.join(host.workspace, 'users', bob, 'mine.md'), 'utf8')).toBe('bob');
    expect(existsSync(path.join(host.workspace, 'mine.md'))).toBe(false);

    const admin = await turnAs(host, await as('root', ['admin']));
    expect(admin.get('r1')?.content.split('\n').sort()).toEqual([`${alice}/`, `${bob}/`].sort());
    expect(admin.get('r2')?.content).toContain('alice only');
    expect(projectContext(4).text).toContain(`repository_root: ${host.workspace}`);
    expect(projectContext(4).text).toContain('- operator-plan.md');
  });

  it("works in the user's directory through the AI SDK's /api/chat too", async () => {
    const steps: ScriptedStep[] = [{ toolCalls: [call('write_file', { path: 'from-chat.md', content: 'bob' }, 'c1')] }, { text: 'written' }];
    const host = await openHost(sqliteFile(), steps, { jwt: { keys: { secret: SECRET } }, sandbox: 'off', permissionMode: 'auto' });
    const client = new UiChatClient(host.url, 'chat-of-bob', await token('bob'));
    const { message, errors } = await fold(await client.send([userMessage('u1', 'write it')]));
    expect(errors).toEqual([]);
    expect(texts(message)).toContain('written');
    expect(await readFile(path.join(host.workspace, 'users', principalDirName('bob'), 'from-chat.md'), 'utf8')).toBe('bob');
    expect(existsSync(path.join(host.workspace, 'from-chat.md'))).toBe(false);
  });

  it("roots a session-scoped MCP server at the user's directory (${workspace}); a host-scoped one is named at start", async () => {
    const files = { command: process.execPath, args: [path.join(path.dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist/index.js'), '${workspace}'] };
    const alice = principalDirName('alice');
    const bob = principalDirName('bob');
    const warnings: string[] = [];
    const host = await openHost(
      sqliteFile(),
      [
        // alice: the absolute path her own server gives her
        (request) => ({ toolCalls: [call('files__write_file', { path: path.join(workspaceOf(request), 'users', alice, 'mcp.md'), content: 'alice via mcp' }, 'a1')] }),
        { text: 'ok' },
        // bob
        (request) => ({
          toolCalls: [
            call('files__list_allowed_directories', {}, 'b1'),
            call('files__read_text_file', { path: path.join(workspaceOf(request), 'users', alice, 'mcp.md') }, 'b2'),
            call('files__list_directory', { path: workspaceOf(request) }, 'b3'),
          ],
        }),
        { text: 'ok' },
      ],
      { jwt: { keys: { secret: SECRET } }, sandbox: 'off', mcpServers: { files: { ...files, scope: 'session' }, everywhere: files }, warn: (line) => warnings.push(line) },
    );
    // Its one process sees the whole workspace: the operator is told at start.
    expect(warnings).toContain(`many users and mcpServers.everywhere in scope "host": it works in the whole workspace for every user; scope "session" gives each user's sessions their own directory`);
    expect(warnings.join('\n')).not.toContain('mcpServers.files');
    expect((await turnAs(host, { authorization: `Bearer ${await token('alice')}` })).get('a1')?.status).toBe('succeeded');
    expect(await readFile(path.join(host.workspace, 'users', alice, 'mcp.md'), 'utf8')).toBe('alice via mcp');
    const seen = await turnAs(host, { authorization: `Bearer ${await token('bob')}` });
    expect(seen.get('b1')?.content).toBe(`Allowed directories:\n${path.join(host.workspace, 'users', bob)}`);
    expect(seen.get('b2')?.status).toBe('failed');
    expect(seen.get('b2')?.content).toMatch(/outside allowed directories/i);
    expect(seen.get('b3')?.status).toBe('failed');
  });

  it.skipIf(!bwrap)("runs a user's commands where only their directory of the workspace is there, and writable", async () => {
    const alice = principalDirName('alice');
    const probe = [
      'ls -A ..', // only bob's own directory
      `cat ../${alice}/notes/secret.md 2>/dev/null || echo cannot-read`,
      `ls -A ../.. | tr '\\n' ' '; echo`, // the host's workspace: only users/
      '(echo x > ../x) 2>/dev/null || echo cannot-write-above',
      'echo mine > own.txt && cat own.txt',
    ].join('; ');
    const steps: ScriptedStep[] = [
      { toolCalls: [call('write_file', { path: 'notes/secret.md', content: 'alice only' }, 'a1')] },
      { text: 'ok' },
      { toolCalls: [call('run_command', { command: probe }, 'b1')] },
      { text: 'ok' },
    ];
    const host = await openHost(sqliteFile(), steps, { jwt: { keys: { secret: SECRET } }, sandbox: 'bwrap' });
    await writeFile(path.join(host.workspace, 'host-only.txt'), 'the operator\'s\n');
    await turnAs(host, { authorization: `Bearer ${await token('alice')}` });
    const result = (await turnAs(host, { authorization: `Bearer ${await token('bob')}` })).get('b1')!;
    expect(result.content).toBe(['exit code 0', principalDirName('bob'), 'cannot-read', 'users ', 'cannot-write-above', 'mine', ''].join('\n'));
    expect(existsSync(path.join(host.workspace, 'users', 'x'))).toBe(false);
    expect(await readFile(path.join(host.workspace, 'users', principalDirName('bob'), 'own.txt'), 'utf8')).toBe('mine\n');
  });
});
