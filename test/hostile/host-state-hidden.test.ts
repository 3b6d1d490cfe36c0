/**
 * Issue 25: one host serves many users, and every session works in the one workspace — where the
 * default SQLite database, `.turnchart/turnchart.db`, also lies, holding every user's conversations.
 * The host hides its own state from the workspace tools (`workspaceTools({ hiddenPaths })`): reads,
 * listings, grep's walk and writes refuse or pass over it however the path is spelt (`..`, a
 * symbolic link, an absolute path), and under bubblewrap run_command's sandbox covers it (an empty
 * read-only tmpfs over a directory, /dev/null over a file), the directories leading to it pinned so
 * they cannot be moved aside. Other files in the workspace work as before.
 *
 * The sandbox cases are skipped where bwrap is missing or cannot make namespaces.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { embeddedChatClient } from '../../src/cli/chat-embedded.js';
import { startHost, type RunningHost } from '../../src/host/host.js';
import { scriptedModel, sqliteStatePaths, sqliteStorage, workspaceTools, type AnyTool, type StoredMessage, type ToolExecutionResult } from '../../src/index.js';
import { coverArgs, type BwrapContainment } from '../../src/tools/sandbox/bwrap.js';
import { harness, type Harness } from '../support/harness.js';
import { useTempDirs } from '../support/workspace.js';
import { snapshot, toolResults } from '../tools/support.js';

const tempDir = useTempDirs('turnchart-host-state-');
const quiet = () => undefined;
const probe = workspaceTools({ root: os.tmpdir(), warn: quiet }).find((tool) => tool.name === 'run_command')!;
const bwrap = probe.sandbox?.kind === 'bwrap';
const skipReason = bwrap ? '' : ` (skipped: no usable bwrap — ${probe.sandbox?.kind === 'off' ? probe.sandbox.reason : 'no sandbox'})`;

let h: Harness | undefined;
let host: RunningHost | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  await host?.close();
  [h, host] = [undefined, undefined];
});

type ToolMessage = Extract<StoredMessage['message'], { role: 'tool' }>;

/** One tool call the model makes: its id names what it tries. */
interface Attempt {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** The calls that try to reach the host's state at `state` (a path relative to the workspace) by every spelling. */
function attacksOn(state: { dir: string; file: string }, root: string, marker: string): Attempt[] {
  const { dir, file } = state;
  const spellings = [file, `./${dir}/../${file}`, `nowhere/../${file}`, path.join(root, file), 'state-link/' + path.basename(file), 'db-link'];
  return [
    ...spellings.map((spelt, i) => ({ id: `read-${i}`, name: 'read_file', args: { path: spelt } })),
    { id: 'read-wal', name: 'read_file', args: { path: `${file}-wal` } },
    { id: 'list-state', name: 'list_dir', args: { path: dir } },
    { id: 'list-state-link', name: 'list_dir', args: { path: 'state-link' } },
    { id: 'grep-state', name: 'grep', args: { pattern: marker, path: dir } },
    { id: 'grep-state-link', name: 'grep', args: { pattern: marker, path: 'state-link' } },
    { id: 'grep-file', name: 'grep', args: { pattern: marker, path: file } },
    ...spellings.map((spelt, i) => ({ id: `write-${i}`, name: 'write_file', args: { path: spelt, content: 'pwned' } })),
    { id: 'write-journal', name: 'write_file', args: { path: `${file}-journal`, content: 'pwned' } },
    { id: 'write-new', name: 'write_file', args: { path: `${dir}/planted.txt`, content: 'pwned' } },
    ...spellings.map((spelt, i) => ({ id: `edit-${i}`, name: 'edit_file', args: { path: spelt, oldText: marker, newText: 'pwned' } })),
  ];
}

/** What the model also does, and must still be able to do: the rest of the workspace. */
const CONTROLS: Attempt[] = [
  { id: 'list-root', name: 'list_dir', args: {} },
  { id: 'list-root-via-state', name: 'list_dir', args: { path: '.turnchart/..' } },
  { id: 'grep-root', name: 'grep', args: { pattern: 'hello|MARK-' } },
  { id: 'glob-db', name: 'grep', args: { pattern: '.', include: '*.db*' } },
  { id: 'read-notes', name: 'read_file', args: { path: 'notes.txt' } },
  { id: 'write-other', name: 'write_file', args: { path: 'made.txt', content: 'made' } },
  // On a file of its own: the calls of one turn may run at once.
  { id: 'edit-other', name: 'edit_file', args: { path: 'edit-me.txt', oldText: 'before', newText: 'after' } },
];

function byId(results: ToolMessage[]): Map<string, ToolMessage> {
  return new Map(results.map((result) => [result.toolCallId, result]));
}

/** Every attack refused with the reason, and nothing of the state in any answer. */
function expectAttacksRefused(results: Map<string, ToolMessage>, attacks: Attempt[], marker: string) {
  for (const attack of attacks) {
    const result = results.get(attack.id);
    expect(result, attack.id).toBeDefined();
    expect(['denied', 'failed'], `${attack.id}: ${result!.status} ${result!.content}`).toContain(result!.status);
    expect(result!.content, attack.id).toMatch(/not accessible: it holds the host's own state/);
    expect(result!.content, attack.id).not.toContain(marker);
  }
}

/** The controls worked, and the listings and grep walks passed over the state without opening it. */
function expectControlsWorked(results: Map<string, ToolMessage>, marker: string) {
  const get = (id: string) => results.get(id)!;
  for (const control of CONTROLS) expect(get(control.id).status, `${control.id}: ${get(control.id).content}`).toBe('succeeded');
  for (const id of ['list-root', 'list-root-via-state']) {
    expect(get(id).content.split('\n'), id).toContain('notes.txt');
    expect(get(id).content, id).not.toMatch(/^\.turnchart\/$|^data\/app\.db/m);
  }
  // Found in notes.txt; the state never searched (it would have been "skipped" as binary, or matched as text).
  expect(get('grep-root').content).toMatch(/^notes\.txt:1: hello/m);
  expect(get('grep-root').content).not.toContain(marker);
  expect(get('grep-root').content).not.toMatch(/skipped/);
  expect(get('glob-db').content).toMatch(/^no matches in 0 files searched$/);
}

/** notes.txt, and links into the state: one to its directory, one to the database file. */
async function plantLinks(root: string, state: { dir: string; file: string }) {
  await writeFile(path.join(root, 'notes.txt'), 'hello world\n');
  await writeFile(path.join(root, 'edit-me.txt'), 'before\n');
  await symlink(state.dir, path.join(root, 'state-link'));
  await symlink(state.file, path.join(root, 'db-link'));
}

/** One turn in which the model makes its calls (all at once) and then answers `done`. */
async function runTurn(session: Harness['session']) {
  const started = await session.startTurn({ clientRequestId: randomUUID(), input: [{ type: 'text', text: 'look around' }] });
  if (!started.ok) throw new Error('turn refused');
  expect(await session.waitForTurn(started.turnId)).toEqual({ status: 'completed', finalText: 'done' });
}

/** The stored messages of `sessionId` in the SQLite file, read with a connection of the test's own. */
async function storedMessages(file: string, sessionId: string): Promise<StoredMessage[]> {
  const storage = sqliteStorage({ filename: file });
  try {
    return await storage.listMessages(sessionId);
  } finally {
    await storage.close();
  }
}

async function storedToolResults(file: string, sessionId: string): Promise<ToolMessage[]> {
  return (await storedMessages(file, sessionId)).flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));
}

/** The bytes of the database and its write-ahead log, as one latin1 string. */
async function databaseBytes(file: string): Promise<string> {
  const parts = await Promise.all(['', '-wal'].map((suffix) => readFile(`${file}${suffix}`, 'latin1').catch(() => '')));
  return parts.join('');
}

/** Calls run_command as the runtime does. */
function run(tool: AnyTool, command: string): Promise<ToolExecutionResult> {
  const ctx = { sessionId: 's', turnId: 't', toolCallId: 'c', signal: new AbortController().signal, progress: quiet, approvedPaths: [], agentSandbox: { network: false } };
  return Promise.resolve(tool.execute(tool.input.parse({ command }), ctx));
}

describe("a host whose SQLite database lies in the workspace (the default .turnchart/turnchart.db)", { timeout: 60_000 }, () => {
  it('read_file, list_dir, grep (and its include glob), write_file and edit_file refuse or pass over the database by every spelling; the rest of the workspace works', async () => {
    const root = await tempDir();
    const file = path.join(root, '.turnchart', 'turnchart.db');
    const marker = `MARK-${randomUUID()}`;
    const state = { dir: '.turnchart', file: '.turnchart/turnchart.db' };
    const attacks = attacksOn(state, root, marker);
    host = await startHost({
      host: '127.0.0.1',
      port: 0,
      idleTtlSeconds: 300,
      db: file,
      workspace: root,
      sandbox: 'off',
      model: scriptedModel([{ text: 'noted' }, { text: 'looking', toolCalls: [...attacks, ...CONTROLS] }, { text: 'done' }]),
      warn: quiet,
    });
    await plantLinks(root, state);

    // Another user's session puts its conversation in the database.
    const victim = await host.runtime.createSession({ permissionMode: 'auto', workspaceDir: root });
    const said = await victim.startTurn({ clientRequestId: 'v1', input: [{ type: 'text', text: `my secret is ${marker}` }] });
    if (!said.ok) throw new Error('turn refused');
    await victim.waitForTurn(said.turnId);
    expect(await databaseBytes(file), 'the conversation is in the database files').toContain(marker);

    const attacker = await host.runtime.createSession({ permissionMode: 'auto', workspaceDir: root });
    await runTurn(attacker);
    const stateBefore = (await readdir(path.dirname(file))).sort();
    await host.close();
    host = undefined;

    const results = byId(await storedToolResults(file, attacker.id));
    expectAttacksRefused(results, attacks, marker);
    expectControlsWorked(results, marker);
    // Nothing was planted in the state's directory, and the database still holds the victim's turn.
    expect(stateBefore.filter((name) => !/^turnchart\.db(-wal|-shm)?$/.test(name))).toEqual([]);
    expect(JSON.stringify(await storedMessages(file, victim.id))).toContain(marker);
    expect(await readFile(path.join(root, 'made.txt'), 'utf8')).toBe('made');
    expect(await readFile(path.join(root, 'edit-me.txt'), 'utf8')).toBe('after\n');
  });

  it.skipIf(!bwrap)(`run_command in the sandbox finds .turnchart empty and read-only, cannot move it aside, and still works on the rest${skipReason}`, async () => {
    const root = await tempDir();
    const file = path.join(root, '.turnchart', 'turnchart.db');
    const marker = `MARK-${randomUUID()}`;
    const attack = [
      'ls -A .turnchart | wc -l',
      `cat .turnchart/turnchart.db .turnchart/turnchart.db-wal db-link state-link/turnchart.db 2>/dev/null | grep -ac "${marker.slice(0, 12)}"`,
      '{ echo pwned > .turnchart/turnchart.db; } 2>/dev/null && echo wrote-db || echo no-write-db',
      '{ echo pwned > .turnchart/planted; } 2>/dev/null && echo planted || echo not-planted',
      'mv .turnchart moved 2>/dev/null && echo moved || echo not-moved',
      'rm -rf .turnchart 2>/dev/null; test -d .turnchart && echo still-there',
      `grep -rac "${marker.slice(0, 12)}" . | grep -v ':0$' | wc -l`,
      'cat notes.txt; echo made > made.txt',
    ].join('; ');
    host = await startHost({
      host: '127.0.0.1',
      port: 0,
      idleTtlSeconds: 300,
      db: file,
      workspace: root,
      sandbox: 'bwrap',
      model: scriptedModel([{ text: 'noted' }, { text: 'looking', toolCalls: [{ id: 'attack', name: 'run_command', args: { command: attack } }] }, { text: 'done' }]),
      warn: quiet,
    });
    await plantLinks(root, { dir: '.turnchart', file: '.turnchart/turnchart.db' });
    const victim = await host.runtime.createSession({ permissionMode: 'auto', workspaceDir: root });
    const said = await victim.startTurn({ clientRequestId: 'v1', input: [{ type: 'text', text: `my secret is ${marker}` }] });
    if (!said.ok) throw new Error('turn refused');
    await victim.waitForTurn(said.turnId);
    expect(await databaseBytes(file)).toContain(marker);

    const attacker = await host.runtime.createSession({ permissionMode: 'auto', workspaceDir: root });
    await runTurn(attacker);
    await host.close();
    host = undefined;

    const [result] = await storedToolResults(file, attacker.id);
    expect(result!.content.trimEnd().split('\n')).toEqual(['exit code 0', '0', '0', 'no-write-db', 'not-planted', 'not-moved', 'still-there', '0', 'hello world']);
    expect(await readFile(path.join(root, 'made.txt'), 'utf8')).toBe('made\n');
    expect(existsSync(path.join(root, 'moved'))).toBe(false);
    expect((await readdir(path.dirname(file))).filter((name) => !/^turnchart\.db(-wal|-shm)?$/.test(name))).toEqual([]);
    expect(JSON.stringify(await storedMessages(file, victim.id))).toContain(marker);
  });
});

/** A database at `data/app.db` (an operator's `--db` inside the workspace), its files as text so only hiding keeps read_file and grep from them. */
async function customDatabase() {
  const root = await tempDir();
  const marker = `MARK-${randomUUID()}`;
  const file = path.join(root, 'data', 'app.db');
  await mkdir(path.dirname(file));
  await writeFile(file, `conversation ${marker}\n`);
  await writeFile(`${file}-wal`, `wal ${marker}\n`);
  await writeFile(path.join(root, 'data', 'other.txt'), 'other\n');
  await writeFile(path.join(root, 'data', 'edit-me.txt'), 'before\n');
  await writeFile(path.join(root, 'notes.txt'), 'hello world\n');
  await symlink('data', path.join(root, 'state-link'));
  await symlink('data/app.db', path.join(root, 'db-link'));
  return { root, marker, file, hiddenPaths: sqliteStatePaths(file, root) };
}

describe('an --db file inside the workspace (its file, -wal, -shm and -journal hidden)', { timeout: 60_000 }, () => {
  it('the tools refuse it however it is named, pass over it in listings and grep, and leave the files next to it alone', async () => {
    const { root, marker, file, hiddenPaths } = await customDatabase();
    expect(hiddenPaths).toEqual(expect.arrayContaining([file, `${file}-wal`, `${file}-shm`, `${file}-journal`]));
    const spellings = ['data/app.db', './data/../data/app.db', file, 'state-link/app.db', 'db-link'];
    const attacks: Attempt[] = [
      ...spellings.map((spelt, i) => ({ id: `read-${i}`, name: 'read_file', args: { path: spelt } })),
      { id: 'read-wal', name: 'read_file', args: { path: 'state-link/app.db-wal' } },
      { id: 'grep-file', name: 'grep', args: { pattern: marker, path: 'data/app.db-wal' } },
      ...spellings.map((spelt, i) => ({ id: `write-${i}`, name: 'write_file', args: { path: spelt, content: 'pwned' } })),
      { id: 'write-journal', name: 'write_file', args: { path: 'data/app.db-journal', content: 'pwned' } },
      ...spellings.map((spelt, i) => ({ id: `edit-${i}`, name: 'edit_file', args: { path: spelt, oldText: marker, newText: 'pwned' } })),
    ];
    const controls: Attempt[] = [
      { id: 'list-data', name: 'list_dir', args: { path: 'data' } },
      { id: 'list-link', name: 'list_dir', args: { path: 'state-link' } },
      { id: 'grep-root', name: 'grep', args: { pattern: `${marker}|other` } },
      { id: 'read-other', name: 'read_file', args: { path: 'state-link/other.txt' } },
      { id: 'edit-other', name: 'edit_file', args: { path: 'data/edit-me.txt', oldText: 'before', newText: 'after' } },
    ];
    const before = { db: await readFile(file, 'utf8'), wal: await readFile(`${file}-wal`, 'utf8') };
    h = await harness([{ text: 'looking', toolCalls: [...attacks, ...controls] }, { text: 'done' }], {
      tools: workspaceTools({ root, hiddenPaths, sandbox: 'off', warn: quiet }),
      permissionMode: 'auto',
    });
    await runTurn(h.session);
    const results = byId(await toolResults(h));
    expectAttacksRefused(results, attacks, marker);
    for (const control of controls) expect(results.get(control.id)!.status, control.id).toBe('succeeded');
    for (const id of ['list-data', 'list-link']) expect(results.get(id)!.content.split('\n'), id).toEqual(['edit-me.txt', 'other.txt']);
    expect(results.get('grep-root')!.content).toBe('data/other.txt:1: other');
    expect(results.get('read-other')!.content).toContain('other');
    expect({ db: await readFile(file, 'utf8'), wal: await readFile(`${file}-wal`, 'utf8') }).toEqual(before);
    expect((await readdir(path.dirname(file))).sort()).toEqual(['app.db', 'app.db-wal', 'edit-me.txt', 'other.txt']);
    expect(await readFile(path.join(root, 'data', 'edit-me.txt'), 'utf8')).toBe('after\n');
  });

  it('execute refuses on its own as well (a path that became hidden after authorize allowed it)', async () => {
    const { root, marker, hiddenPaths } = await customDatabase();
    const tools = workspaceTools({ root, hiddenPaths, sandbox: 'off', warn: quiet });
    const ctx = { sessionId: 's', turnId: 't', toolCallId: 'c', signal: new AbortController().signal, progress: quiet, approvedPaths: [] };
    for (const [name, args] of [
      ['read_file', { path: 'db-link' }],
      ['list_dir', { path: 'state-link/app.db' }],
      ['write_file', { path: 'state-link/app.db-shm', content: 'x' }],
      ['edit_file', { path: 'data/app.db', oldText: marker, newText: 'x' }],
    ] as const) {
      const tool = tools.find((t) => t.name === name)!;
      const result = await tool.execute(tool.input.parse(args), ctx);
      expect(result, name).toMatchObject({ status: 'failed' });
      expect(result.content, name).toMatch(/^refused: .*not accessible/);
    }
    expect(existsSync(path.join(root, 'data', 'app.db-shm'))).toBe(false);
  });

  it.skipIf(!bwrap)(`run_command in the sandbox reads /dev/null in its place, cannot replace, remove or move it (or its directory), and works beside it${skipReason}`, async () => {
    const { root, marker, file, hiddenPaths } = await customDatabase();
    const before = await snapshot(path.join(root, 'data'));
    const tool = workspaceTools({ root, hiddenPaths, sandbox: 'bwrap', warn: quiet }).find((t) => t.name === 'run_command')!;
    const result = await run(
      tool,
      [
        `cat data/app.db data/app.db-wal db-link 2>/dev/null | grep -c "${marker.slice(0, 12)}"`,
        '{ echo pwned > data/app.db; } 2>/dev/null && echo wrote || echo not-written',
        'rm -f data/app.db 2>/dev/null; test -e data/app.db && echo not-removed',
        'mv data moved 2>/dev/null && echo moved || echo not-moved',
        'mv data/app.db-wal data/wal 2>/dev/null && echo wal-moved || echo wal-stayed',
        'ls data',
        'cat data/other.txt; echo beside > data/beside.txt; cat data/beside.txt',
      ].join('; '),
    );
    expect(result.content.trimEnd().split('\n')).toEqual(['exit code 0', '0', 'not-written', 'not-removed', 'not-moved', 'wal-stayed', 'app.db', 'app.db-wal', 'edit-me.txt', 'other.txt', 'other', 'beside']);
    expect(await snapshot(path.join(root, 'data'))).toEqual({ ...before, 'beside.txt': 'beside\n' });
    expect(existsSync(path.join(root, 'moved'))).toBe(false);
    expect(await readFile(file, 'utf8')).toContain(marker);
  });
});

describe.skipIf(!bwrap)('the embedded chat', () => {
  it(`hides its own database in the workspace from its tools and its sandbox${skipReason}`, { timeout: 30_000 }, async () => {
    const root = await tempDir();
    const db = path.join(root, '.turnchart', 'chat.db');
    const script = path.join(await tempDir(), 'model.json');
    const calls = [
      { id: 'read', name: 'read_file', args: { path: '.turnchart/chat.db' } },
      { id: 'list', name: 'list_dir', args: {} },
      { id: 'run', name: 'run_command', args: { command: 'ls -A .turnchart | wc -l' } },
    ];
    await writeFile(script, JSON.stringify([{ text: 'looking', toolCalls: calls }, { text: 'done' }]));
    await writeFile(path.join(root, 'notes.txt'), 'hello\n');
    const client = await embeddedChatClient({ db, workspace: root, model: `scripted:${script}`, sandbox: 'bwrap', warn: quiet });
    let sessionId = '';
    try {
      sessionId = (await client.createSession({ permissionMode: 'auto' })).sessionId;
      const { turnId } = await client.submitTurn(sessionId, { clientRequestId: 'c1', input: [{ type: 'text', text: 'go' }] });
      expect(await client.runtime.openHandle(sessionId)!.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'done' });
    } finally {
      await client.close();
    }
    const results = byId(await storedToolResults(db, sessionId));
    expect(results.get('read')).toMatchObject({ status: 'denied' });
    expect(results.get('list')!.content.split('\n')).toEqual(['notes.txt']);
    expect(results.get('run')!.content).toBe('exit code 0\n0\n');
  });
});

describe('what is hidden, and how the sandbox covers it', () => {
  const sandbox: BwrapContainment = { kind: 'bwrap', bwrap: '/usr/bin/bwrap', hidden: ['/run'], resolvConf: null };

  it('the host hides the .turnchart directory of the default database, else the database file and its siblings', async () => {
    const root = await tempDir();
    expect(sqliteStatePaths(path.join(root, '.turnchart', 'turnchart.db'), root)).toEqual([path.join(root, '.turnchart')]);
    expect(sqliteStatePaths(path.join(root, 'db.sqlite'), root)).toEqual(['', '-wal', '-shm', '-journal'].map((s) => path.join(root, `db.sqlite${s}`)));
    // A workspace inside .turnchart: hiding the directory would hide the workspace, so the files are hidden.
    expect(sqliteStatePaths(path.join(root, '.turnchart', 'turnchart.db'), path.join(root, '.turnchart', 'ws'))).toHaveLength(4);
    expect(sqliteStatePaths(':memory:', root)).toEqual([]);
  });

  it('workspaceTools refuses a relative hidden path, and one that would hide the workspace itself', async () => {
    const root = await tempDir();
    expect(() => workspaceTools({ root, hiddenPaths: ['.turnchart'], sandbox: 'off' })).toThrow(/hiddenPaths: .*absolute/);
    expect(() => workspaceTools({ root, hiddenPaths: [path.dirname(root)], sandbox: 'off' })).toThrow(/holds the workspace itself/);
    expect(() => workspaceTools({ root, hiddenPaths: [root], sandbox: 'off' })).toThrow(/holds the workspace itself/);
  });

  it('covers after the workspace is bound: pinned directories first, then each cover, parents first; nothing it does not show, nothing twice', () => {
    const ws = '/srv/ws';
    const args = coverArgs(sandbox, ws, [
      { path: '/srv/ws/.turnchart', directory: true },
      { path: '/srv/ws/.turnchart/turnchart.db', directory: false },
      { path: '/srv/ws/a/b/app.db', directory: false },
      { path: '/srv/ws/app.db-wal', directory: false },
      { path: '/home/op/.turnchart', directory: true },
      { path: '/tmp/other/db.sqlite', directory: false },
      { path: '/run/turnchart.db', directory: false },
      { path: '/srv', directory: true },
      { path: ws, directory: true },
    ]);
    expect(args).toEqual([
      '--bind', '/srv/ws/a', '/srv/ws/a',
      '--bind', '/srv/ws/a/b', '/srv/ws/a/b',
      '--tmpfs', '/home/op/.turnchart', '--remount-ro', '/home/op/.turnchart',
      '--tmpfs', '/srv/ws/.turnchart', '--remount-ro', '/srv/ws/.turnchart',
      '--ro-bind', '/dev/null', '/srv/ws/a/b/app.db',
      '--ro-bind', '/dev/null', '/srv/ws/app.db-wal',
    ]);
    // Inside a workspace under /tmp it is shown (bound back), so covered.
    expect(coverArgs(sandbox, '/tmp/ws', [{ path: '/tmp/ws/.turnchart', directory: true }])).toEqual(['--tmpfs', '/tmp/ws/.turnchart', '--remount-ro', '/tmp/ws/.turnchart']);
  });
});
