/**
 * Issue 25: run_command's bubblewrap sandbox. Under `sandbox: 'bwrap'` (or `auto` where bwrap works)
 * a command writes only in the workspace, has a /tmp of its own, sees no /run, and reaches no
 * network — not even the host's loopback — unless its agent allows it; the tool's description and
 * the world state's sandbox policy say which sandbox is in force. The bwrap cases are skipped where
 * bwrap is missing or cannot make namespaces (the `.ci/run` script installs it).
 */
import { randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workspaceTools, type AnyTool, type ToolExecutionResult } from '../../src/index.js';
import { renderSandboxPolicy } from '../../src/context/world-state/sandbox-policy.js';
import { commandSettings } from '../../src/tools/sandbox/command-settings.js';
import { harness, runTurn, type Harness } from '../support/harness.js';
import { useTempDirs } from '../support/workspace.js';
import { eventually, toolResults } from './support.js';

const tempDir = useTempDirs('turnchart-sandbox-');

const quiet = () => undefined;

/**
 * A node binary a sandboxed command can run: its /tmp is a private tmpfs, so a node installed under
 * /tmp (CI's Node 24, unpacked in the clone) is not there; then the first other `node` on PATH.
 */
const sandboxNode = [process.execPath, ...(process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'node'))].find(
  (file) => path.isAbsolute(file) && !file.startsWith('/tmp/') && !file.startsWith(`${os.tmpdir()}/`) && existsSync(file),
);
const probe = workspaceTools({ root: os.tmpdir(), warn: quiet }).find((tool) => tool.name === 'run_command')!;
const bwrap = probe.sandbox?.kind === 'bwrap';
const skipReason = bwrap ? '' : ` (skipped: no usable bwrap — ${probe.sandbox?.kind === 'off' ? probe.sandbox.reason : 'no sandbox'})`;

/** Whether this process can connect to 127.0.0.1:`port`, or to a unix socket. */
function reachable(address: number | string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = typeof address === 'number' ? net.connect(address, '127.0.0.1') : net.connect(address);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const postgresListening = await reachable(5432);

function runCommand(root: string): AnyTool {
  return workspaceTools({ root, sandbox: 'bwrap', killGraceMs: 2_000 }).find((tool) => tool.name === 'run_command')!;
}

/** Calls the tool as the runtime does, with the session agent's sandbox settings. */
function run(tool: AnyTool, command: string, options: { network?: boolean; signal?: AbortSignal } = {}): Promise<ToolExecutionResult> {
  const signal = options.signal ?? new AbortController().signal;
  const ctx = { sessionId: 's', turnId: 't', toolCallId: 'c', signal, progress: quiet, approvedPaths: [], agentSandbox: { network: options.network ?? false } };
  return Promise.resolve(tool.execute(tool.input.parse({ command }), ctx));
}

/** A shell line that says `connected` or `not-connected` for a TCP connection to 127.0.0.1:`port` (bash's /dev/tcp). */
const tcpProbe = (port: number) => `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port}' 2>&1 && echo connected || echo not-connected`;

/** A node script, run inside the sandbox, that says `connected` or the error code for a unix socket. */
const UNIX_PROBE = "const s = require('net').connect(process.argv[2]); s.on('connect', () => { console.log('connected'); s.destroy(); }); s.on('error', (e) => console.log(e.code));";

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server of this test on `address` (a port on 127.0.0.1, or a unix socket path) that accepts and drops connections. */
async function listen(address: number | string): Promise<net.Server> {
  const server = net.createServer((socket) => socket.destroy());
  servers.push(server);
  await new Promise<void>((resolve) => (typeof address === 'number' ? server.listen(address, '127.0.0.1', resolve) : server.listen(address, resolve)));
  return server;
}

describe.skipIf(!bwrap)(`run_command under bwrap${skipReason}`, () => {
  it('writes inside the workspace and nowhere else: not /etc, not HOME, not the host\'s temporary directory', async () => {
    const root = await tempDir();
    const outside = await tempDir();
    const id = randomUUID();
    const home = os.homedir();
    const targets = [path.join(outside, 'x.txt'), `/etc/turnchart-${id}`, path.join(home, `turnchart-${id}`)];
    try {
      const result = await run(runCommand(root), ['echo ok > inside.txt', ...targets.map((file) => `echo no > ${file}`), 'echo done'].join('; '));
      expect(result.status).toBe('succeeded');
      expect(await readFile(path.join(root, 'inside.txt'), 'utf8')).toBe('ok\n');
      expect(result.content).toContain(`/etc/turnchart-${id}: Read-only file system`);
      for (const file of targets) expect(existsSync(file), file).toBe(false);
    } finally {
      await Promise.all(targets.map((file) => rm(file, { force: true })));
    }
  });

  it('has a /tmp of its own: the host\'s files are not in it, and what it writes there never reaches the host', async () => {
    const root = await tempDir();
    const id = randomUUID();
    const hostFile = path.join('/tmp', `turnchart-host-${id}`);
    await writeFile(hostFile, 'host\n');
    try {
      const result = await run(runCommand(root), `test -e ${hostFile} && echo sees-the-host; echo mine > /tmp/own-${id}; cat /tmp/own-${id}`);
      expect(result.content).not.toContain('sees-the-host');
      expect(result.content).toContain('mine\n');
      expect(existsSync(`/tmp/own-${id}`)).toBe(false);
    } finally {
      await rm(hostFile, { force: true });
    }
  });

  it('reaches no TCP port of the host, not even on 127.0.0.1; an agent that allows the network does', async () => {
    const server = await listen(0);
    const { port } = server.address() as net.AddressInfo;
    // The control: the port is open to the host itself, so the refusal below is the sandbox's.
    expect(await reachable(port)).toBe(true);
    const tool = runCommand(await tempDir());
    const denied = await run(tool, tcpProbe(port));
    expect(denied.content).toContain('Connection refused');
    expect(denied.content).toMatch(/not-connected\n$/);
    expect((await run(tool, tcpProbe(port), { network: true })).content).toMatch(/\nconnected\n$/);
  });

  it.skipIf(!postgresListening)('cannot reach the PostgreSQL server on 127.0.0.1:5432 that the host itself reaches', async () => {
    const tool = runCommand(await tempDir());
    expect(await reachable(5432)).toBe(true);
    expect((await run(tool, tcpProbe(5432))).content).toMatch(/Connection refused[\s\S]*not-connected\n$/);
    expect((await run(tool, tcpProbe(5432), { network: true })).content).toMatch(/\nconnected\n$/);
  });

  it.skipIf(!writable('/run') || !sandboxNode)('sees an empty /run: the unix sockets of the host\'s services there are out of reach', async () => {
    const socket = path.join('/run', `turnchart-test-${randomUUID()}.sock`);
    await listen(socket);
    const root = await tempDir();
    await writeFile(path.join(root, 'probe.cjs'), UNIX_PROBE);
    // The control: the socket accepts the host's connections, so the ENOENT below is the sandbox's.
    expect(await reachable(socket)).toBe(true);
    expect((await run(runCommand(root), `ls -A /run | wc -l; "${sandboxNode}" probe.cjs ${socket}`)).content).toBe('exit code 0\n0\nENOENT\n');
  });

  it.skipIf(!sandboxNode)('still reaches a unix socket outside /run and /tmp: a read-only mount does not stop connect()', async () => {
    // What the sandbox does not cover, stated so it stays known: sockets elsewhere (a home directory, /var) stay reachable.
    const dir = await mkdtemp(path.join('/var/tmp', 'turnchart-sandbox-sock-'));
    try {
      const socket = path.join(dir, 'service.sock');
      await listen(socket);
      const root = await tempDir();
      await writeFile(path.join(root, 'probe.cjs'), UNIX_PROBE);
      const result = await run(runCommand(root), `(echo x > ${dir}/written) 2>/dev/null || echo read-only; "${sandboxNode}" probe.cjs ${socket}`);
      expect(result.content).toBe('exit code 0\nread-only\nconnected\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('runs in a PID namespace of its own, without capabilities even when the host is root', async () => {
    const result = await run(runCommand(await tempDir()), 'echo $$; grep CapEff /proc/self/status; mount -o remount,rw / 2>/dev/null || echo cannot-remount');
    expect(result.content).toBe('exit code 0\n2\nCapEff:\t0000000000000000\ncannot-remount\n');
  });

  it('gives the command its SIGTERM and grace on cancel, then reports it cancelled', async () => {
    const root = await tempDir();
    const controller = new AbortController();
    const pending = run(runCommand(root), "trap 'echo cleaning up; echo done > cleaned; exit 0' TERM; echo ready > ready; while :; do sleep 0.05; done", { signal: controller.signal });
    await eventually(() => existsSync(path.join(root, 'ready')), 'the command has set its trap');
    controller.abort();
    const result = await pending;
    expect(result.status).toBe('cancelled');
    expect(result.content).toContain('cleaning up');
    expect(await readFile(path.join(root, 'cleaned'), 'utf8')).toBe('done\n');
  });

  it('says so in its description', async () => {
    const tool = runCommand(await tempDir());
    expect(tool.description).toContain('bubblewrap sandbox: the file system is read-only (HOME included) except the workspace');
    expect(tool.description).toContain('no network unless its agent allows it');
    expect(tool.description).not.toContain('not confined to the workspace');
    expect(tool.sandbox).toEqual({ kind: 'bwrap' });
  });
});

describe.skipIf(!bwrap)(`the sandbox in a real turn${skipReason}`, () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.runtime.shutdown();
    h = undefined;
  });

  it.each([false, true])('an agent with sandbox.network %s: its commands reach the network or not, and the sandbox policy says which', async (network) => {
    const server = await listen(0);
    const { port } = server.address() as net.AddressInfo;
    const root = await tempDir();
    h = await harness([{ text: 'trying', toolCalls: [{ id: 'x1', name: 'run_command', args: { command: tcpProbe(port) } }] }, { text: 'done' }], {
      tools: workspaceTools({ root, sandbox: 'bwrap' }),
      agents: { default: { sandbox: { network } } },
      permissionMode: 'auto',
    });
    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    const [result] = await toolResults(h);
    expect(result!.content).toMatch(network ? /\nconnected\n$/ : /not-connected\n$/);
    const policy = renderSandboxPolicy('auto', { command: { kind: 'bwrap' }, network });
    expect(policy).toContain(network ? "network: allowed — commands share the host's network" : 'network: none — commands cannot open connections');
    expect(h.model.requests[0]!.messages).toContainEqual({ role: 'user', text: policy });
    // The session's snapshot says the same to a client (RT-21).
    expect(h.session.snapshot().sandbox).toEqual({ kind: 'bwrap', network });
  });
});

describe('without a sandbox', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.runtime.shutdown();
    h = undefined;
  });

  it('sandbox off: the description and the world state say the command is not confined, and why', async () => {
    const root = await tempDir();
    const tools = workspaceTools({ root, sandbox: 'off' });
    const tool = tools.find((t) => t.name === 'run_command')!;
    expect(tool.sandbox).toEqual({ kind: 'off', reason: 'the operator turned the sandbox off' });
    expect(tool.description).toContain("not confined to the workspace: it can read and write wherever the host's user can (no sandbox: the operator turned the sandbox off)");
    h = await harness([{ text: 'hi' }], { tools, permissionMode: 'ask' });
    await runTurn(h.session, 'hello');
    const policy = renderSandboxPolicy('ask', { command: tool.sandbox!, network: false });
    expect(policy).toContain('sandbox: none — tools run in the host process with its permissions; reason: the operator turned the sandbox off');
    expect(policy).not.toContain('network:');
    expect(h.model.requests[0]!.messages).toContainEqual({ role: 'user', text: policy });
    expect(h.session.snapshot().sandbox).toEqual({ kind: 'none', reason: 'the operator turned the sandbox off' });
  });

  it('an agent without run_command: the snapshot says no sandbox, with no reason, as the policy does', async () => {
    h = await harness([{ text: 'hi' }], { tools: workspaceTools({ root: await tempDir(), sandbox: 'off' }).filter((t) => t.name !== 'run_command') });
    await runTurn(h.session, 'hello');
    expect(h.model.requests[0]!.messages).toContainEqual({ role: 'user', text: renderSandboxPolicy('ask', null) });
    expect(h.session.snapshot().sandbox).toEqual({ kind: 'none', reason: null });
  });

  it("auto where bwrap is not found: one warning line, no sandbox, and the reason in the tool's description", () => {
    const warnings: string[] = [];
    const settings = commandSettings({ sandbox: 'auto', warn: (line) => warnings.push(line) }, { PATH: '/nonexistent' });
    expect(warnings).toEqual(["no sandbox: bwrap not found (apt-get install bubblewrap); run_command runs with the host user's file access"]);
    expect(settings.sandbox).toEqual({ kind: 'off', reason: 'bwrap not found (apt-get install bubblewrap)' });
    expect(settings.containment.kind).not.toBe('bwrap');
  });

  it('bwrap where bwrap is not found: a SandboxUnavailable error, not a quiet fallback', () => {
    expect(() => commandSettings({ sandbox: 'bwrap', warn: quiet }, { PATH: '/nonexistent' })).toThrow(
      expect.objectContaining({ code: 'SandboxUnavailable', message: expect.stringMatching(/^--sandbox bwrap: bwrap not found \(apt-get install bubblewrap\); /) }),
    );
  });

  it('refuses a sandbox together with the process-group containment, and an unknown choice', () => {
    expect(() => workspaceTools({ root: '/tmp', sandbox: 'bwrap', commandContainment: 'process-group' })).toThrow(expect.objectContaining({ code: 'InvalidWorkspaceOptions' }));
    expect(() => workspaceTools({ root: '/tmp', sandbox: 'docker' as 'off' })).toThrow(expect.objectContaining({ code: 'InvalidWorkspaceOptions' }));
    const fallback = workspaceTools({ root: '/tmp', commandContainment: 'process-group' }).find((t) => t.name === 'run_command')!;
    expect(fallback.sandbox).toEqual({ kind: 'off', reason: "the embedder chose commandContainment 'process-group'" });
  });

  it.skipIf(!bwrap)('under bwrap a command\'s TMPDIR is its own /tmp', () => {
    const settings = commandSettings({ sandbox: 'bwrap' }, { PATH: process.env.PATH, TMPDIR: '/var/tmp/host-only' });
    expect(settings.env.TMPDIR).toBe('/tmp');
    expect(commandSettings({ sandbox: 'off' }, { PATH: process.env.PATH, TMPDIR: '/var/tmp/host-only' }).env.TMPDIR).toBe('/var/tmp/host-only');
  });
});

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
