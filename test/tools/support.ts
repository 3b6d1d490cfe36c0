import { lstat, mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { workspaceTools, type AnyTool, type ExecuteContext, type ToolExecutionResult, type WorkspaceToolsOptions } from '../../src/index.js';
import type { Harness } from '../support/harness.js';

/**
 * base/ws is the workspace; base/outside must never change. Inside ws: files, a directory `a`,
 * and links leading out — to a file, to a directory, and a dangling one whose target is outside.
 */
export interface Layout {
  base: string;
  root: string;
  outside: string;
}

export async function escapeLayout(makeTempDir: () => Promise<string>): Promise<Layout> {
  const base = await makeTempDir();
  const root = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await mkdir(path.join(root, 'a'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), 'secret\n');
  await writeFile(path.join(root, 'hello.txt'), 'hello secret\n');
  await symlink(path.join(outside, 'secret.txt'), path.join(root, 'link-file'));
  await symlink(outside, path.join(root, 'link-dir'));
  await symlink(path.join(outside, 'made-by-link.txt'), path.join(root, 'dangling'));
  return { base, root, outside };
}

/** Every entry under `dir` with its content (files), target (links) or '<dir>': equal snapshots, nothing changed. */
export async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) {
    const full = path.join(dir, name);
    const info = await lstat(full);
    if (info.isSymbolicLink()) out[name] = `-> ${await readlink(full)}`;
    else if (info.isDirectory()) for (const [k, v] of Object.entries(await snapshot(full))) out[`${name}/${k}`] = v;
    else out[name] = await readFile(full, 'utf8');
  }
  return out;
}

/** The named tool from a fresh `workspaceTools`. */
export function toolNamed(name: string, options: WorkspaceToolsOptions): AnyTool {
  const tool = workspaceTools(options).find((t) => t.name === name);
  if (!tool) throw new Error(`no workspace tool named ${name}`);
  return tool;
}

/** Runs a tool's `execute` directly — no runtime, no `authorize` — with arguments through its schema. */
export async function execute(tool: AnyTool, args: unknown, signal: AbortSignal = new AbortController().signal): Promise<ToolExecutionResult> {
  const ctx: ExecuteContext = { sessionId: 's', turnId: 't', toolCallId: 'c', signal, progress: () => undefined, approvedPaths: [] };
  return tool.execute(tool.input.parse(args), ctx);
}

/** The stored tool results of a session, in order. */
export async function toolResults(h: Harness) {
  return (await h.storage.listMessages(h.session.id)).flatMap((m) => (m.message.role === 'tool' ? [m.message] : []));
}

/**
 * Polls `check` with short awaited pauses until it holds, failing after `timeoutMs`. For waiting on
 * something another process does (a file written, a process gone), where there is no event to await.
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Whether `pid` is a live process. A zombie counts as gone: it has exited and only waits to be
 * reaped, which an orphan's new parent (here PID 1, which may not reap) might never do.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

/** The pids a test command wrote to `file`, one a line, once it has written `count` of them. */
export async function pidsIn(file: string, count: number): Promise<number[]> {
  let pids: number[] = [];
  await eventually(async () => {
    const text = await readFile(file, 'utf8').catch(() => '');
    pids = text.split('\n').filter(Boolean).map(Number);
    return pids.length >= count;
  }, `${count} pids are written to ${file}`);
  return pids;
}
