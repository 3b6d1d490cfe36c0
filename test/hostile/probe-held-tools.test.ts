import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workspaceTools, type WorkspaceToolsOptions } from '../../src/index.js';
import { harness, type Harness } from '../support/harness.js';
import { useTempDirs } from '../support/workspace.js';
import { snapshot, toolResults } from '../tools/support.js';

/**
 * Issue 22, "what held, and must keep holding" — the workspace tools. Every attack the security
 * probe made on them that was refused, replayed as it made it: the model asks for the call in a
 * real turn (auto mode, nothing to approve), and the call must come back refused with a reason
 * (`denied` by the path rule, or `failed` saying why), nothing outside the workspace read or
 * written, and the turn going on. What it asserts is public behaviour only — the status, that a
 * reason is given, what the result holds and what the filesystem holds — not the wording.
 *
 * The HTTP side of the probe's list is `probe-held-http.test.ts`. Related tests elsewhere:
 * `test/tools/escapes.test.ts` (the same escapes, each reason's wording, and execute's re-check),
 * `test/tools/confine.test.ts` (where a path leads), `test/hostile/workspace-race.test.ts` (the
 * symlink race and hard links of findings 3 and 4), `test/hostile/grep-glob.test.ts` (finding 2).
 */

const tempDir = useTempDirs('turnchart-probe-held-');

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

/** What may never show up in a result: the outside file, /etc/passwd, the repository, an environment. */
const OUTSIDE_MARKERS = ['TOP-SECRET-OUTSIDE', 'root:x:0:0', '"devDependencies"', 'PATH=/'];
/** A file name no write may leave anywhere it can reach. */
const PROBE_FILE = 'pwned-by-probe.txt';

interface Layout {
  base: string;
  root: string;
  outside: string;
  /** Whether `zero`, a character device like /dev/zero, could be made inside the workspace (root only). */
  device: boolean;
}

/**
 * base/ws is the workspace; base/outside holds a secret. Inside ws: a file, relative symlinks out
 * (to a file, to a directory, chained, dangling, dangling and chained), symlinks to /proc/self/root,
 * /proc/self/cwd and /dev/zero, a FIFO and, as root, a device node.
 */
async function layout(): Promise<Layout> {
  const base = await tempDir();
  const root = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await mkdir(path.join(root, 'sub'), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), 'TOP-SECRET-OUTSIDE\n');
  await writeFile(path.join(root, 'hello.txt'), 'hello TOP\n');
  await symlink('../outside/secret.txt', path.join(root, 'rel-file'));
  await symlink('../../outside', path.join(root, 'sub', 'rel-dir'));
  await symlink('chain-b', path.join(root, 'chain-a'));
  await symlink('sub/rel-dir', path.join(root, 'chain-b'));
  await symlink(`../outside/${PROBE_FILE}`, path.join(root, 'dangling'));
  await symlink('dangling', path.join(root, 'dangling-chain'));
  await symlink('/proc/self/root', path.join(root, 'proc-root'));
  await symlink('/proc/self/cwd', path.join(root, 'proc-cwd'));
  await symlink('/dev/zero', path.join(root, 'dev-zero'));
  execFileSync('mkfifo', [path.join(root, 'pipe')]);
  let device = false;
  try {
    execFileSync('mknod', [path.join(root, 'zero'), 'c', '1', '5'], { stdio: 'ignore' });
    device = true;
  } catch {
    // Not root, or no CAP_MKNOD: the device node case is skipped, the symlink to /dev/zero stays.
  }
  return { base, root, outside, device };
}

/** One way the probe tried to get out: a path each tool was given. */
interface Escape {
  name: string;
  path: (l: Layout) => string;
}

const ESCAPES: Escape[] = [
  { name: '..', path: () => `../outside/${PROBE_FILE}` },
  { name: '.. through a subdirectory', path: () => `sub/../../outside/secret.txt` },
  { name: 'an absolute path outside', path: (l) => path.join(l.outside, 'secret.txt') },
  { name: '/etc/passwd', path: () => '/etc/passwd' },
  { name: '/proc/self/environ', path: () => '/proc/self/environ' },
  { name: '/proc/self/root/…', path: () => '/proc/self/root/etc/passwd' },
  { name: '/proc/self/cwd/…', path: () => `/proc/self/cwd/${PROBE_FILE}` },
  { name: 'a relative symlink to a file outside', path: () => 'rel-file' },
  { name: 'a relative symlink to a directory outside', path: () => 'sub/rel-dir/secret.txt' },
  { name: 'a chain of symlinks leading out', path: () => 'chain-a/secret.txt' },
  { name: 'a dangling symlink leading out', path: () => 'dangling' },
  { name: 'a chain of dangling symlinks leading out', path: () => 'dangling-chain' },
  { name: 'a symlink to /proc/self/root', path: () => 'proc-root/etc/passwd' },
  { name: 'a symlink to /proc/self/cwd', path: () => `proc-cwd/${PROBE_FILE}` },
  { name: 'a symlink to /dev/zero', path: () => 'dev-zero' },
  { name: 'a NUL byte', path: () => 'hello.txt\0../../outside/secret.txt' },
];

/** Special files inside the workspace: refused as files, never read (a FIFO would block, a device never end). */
const SPECIAL: Escape[] = [
  { name: 'a FIFO', path: () => 'pipe' },
  { name: 'a character device (mknod c 1 5, as /dev/zero)', path: () => 'zero' },
];

/** Names the filesystem cannot take: each refused with a reason, never thrown. */
const TOO_LONG: Escape[] = [
  { name: 'a name longer than NAME_MAX (300 characters)', path: () => `${'n'.repeat(300)}.txt` },
  { name: 'a path longer than PATH_MAX (6 000 characters)', path: () => `${'d/'.repeat(3_000)}x.txt` },
];

/** Each tool's arguments for a path: the file tools get it as a file, list_dir and grep as what they search. */
const TOOLS: { name: string; args: (p: string) => Record<string, unknown> }[] = [
  { name: 'read_file', args: (p) => ({ path: p }) },
  { name: 'write_file', args: (p) => ({ path: p, content: 'pwned' }) },
  { name: 'edit_file', args: (p) => ({ path: p, oldText: 'TOP', newText: 'pwned' }) },
  { name: 'list_dir', args: (p) => ({ path: p }) },
  { name: 'grep', args: (p) => ({ pattern: 'TOP|root|PATH', path: p }) },
];

/**
 * One real turn in auto mode: the model calls every tool on the path at once, then answers. The
 * turn must complete, and every call's stored result is returned.
 */
async function attempt(l: Layout, target: string, options: Partial<WorkspaceToolsOptions> = {}) {
  const calls = TOOLS.map((tool) => ({ id: tool.name, name: tool.name, args: tool.args(target) }));
  h = await harness([{ text: 'trying', toolCalls: calls }, { text: 'could not' }], { tools: workspaceTools({ root: l.root, ...options }), permissionMode: 'auto' });
  const started = await h.session.startTurn({ clientRequestId: 'probe', input: [{ type: 'text', text: 'get out' }] });
  if (!started.ok) throw new Error('turn refused');
  expect(await h.session.waitForTurn(started.turnId)).toEqual({ status: 'completed', finalText: 'could not' });
  const results = await toolResults(h);
  expect(results.map((r) => r.toolName)).toEqual(TOOLS.map((t) => t.name));
  return results;
}

/** Nothing outside the workspace changed: the outside directory, the base, the process's working directory. */
async function expectOutsideUntouched(l: Layout, before: Record<string, string>) {
  expect(await snapshot(l.outside)).toEqual(before);
  expect((await readdir(l.base)).sort()).toEqual(['outside', 'ws']);
  expect(existsSync(path.join(process.cwd(), PROBE_FILE))).toBe(false);
  expect(existsSync(path.join('/', PROBE_FILE))).toBe(false);
}

/** Every name under `dir`, links not followed and nothing opened (the workspace holds a FIFO). */
async function names(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.map((e) => path.join(path.relative(dir, e.parentPath), e.name)).sort();
}

function expectRefused(result: { status: string; content: string }, what: string) {
  expect(['denied', 'failed'], `${what}: ${result.status} ${result.content.slice(0, 200)}`).toContain(result.status);
  // A reason, not an empty refusal; and never what lies outside.
  expect(result.content.trim().length, what).toBeGreaterThan(10);
  for (const marker of OUTSIDE_MARKERS) expect(result.content, what).not.toContain(marker);
}

describe('static path escapes through the workspace tools (what the probe tried, refused)', () => {
  for (const escape of ESCAPES) {
    it(`refuses ${escape.name} in read_file, write_file, edit_file, list_dir and grep`, async () => {
      const l = await layout();
      const before = await snapshot(l.outside);
      for (const result of await attempt(l, escape.path(l))) expectRefused(result, result.toolName);
      await expectOutsideUntouched(l, before);
    });
  }

  for (const special of SPECIAL) {
    it(`refuses ${special.name} inside the workspace without waiting on it or reading it`, async (ctx) => {
      const l = await layout();
      if (special.path(l) === 'zero' && !l.device) ctx.skip();
      const before = await snapshot(l.outside);
      const results = await attempt(l, special.path(l));
      for (const result of results.filter((r) => r.toolName !== 'grep')) expectRefused(result, result.toolName);
      // grep does not search what is not a regular file: whatever it answers, no line of it.
      const grep = results.find((r) => r.toolName === 'grep')!;
      expect(grep.content).not.toMatch(/^pipe:|^zero:/m);
      expect(grep.content.length).toBeLessThan(2_000);
      await expectOutsideUntouched(l, before);
    });
  }

  for (const name of TOO_LONG) {
    it(`refuses ${name.name} with a reason, and nothing is made`, async () => {
      const l = await layout();
      const before = await snapshot(l.outside);
      const inside = await names(l.root);
      for (const result of await attempt(l, name.path(l))) expectRefused(result, result.toolName);
      await expectOutsideUntouched(l, before);
      expect(await names(l.root)).toEqual(inside);
    });
  }
});

/** One real turn, auto mode, in which the model makes one call; answers the stored result and how long the turn took. */
async function oneCall(root: string, options: Partial<WorkspaceToolsOptions>, name: string, args: Record<string, unknown>) {
  h = await harness([{ text: 'trying', toolCalls: [{ id: 'c1', name, args }] }, { text: 'done' }], { tools: workspaceTools({ root, ...options }), permissionMode: 'auto' });
  const started = performance.now();
  const turn = await h.session.startTurn({ clientRequestId: 'probe', input: [{ type: 'text', text: 'run away' }] });
  if (!turn.ok) throw new Error('turn refused');
  expect(await h.session.waitForTurn(turn.turnId)).toEqual({ status: 'completed', finalText: 'done' });
  const [result] = await toolResults(h);
  return { result: result!, ms: performance.now() - started };
}

describe('runaway work through the workspace tools (what the probe tried, stopped)', () => {
  it('a command printing 100 MB: the result is capped at maxOutputChars, head and tail, with a note saying how much was cut', { timeout: 60_000 }, async () => {
    const root = await tempDir();
    const maxOutputChars = 50_000;
    const { result } = await oneCall(root, { maxOutputChars }, 'run_command', { command: "head -c 100000000 /dev/zero | tr '\\0' a; echo; echo THE-END" });
    expect(result).toMatchObject({ toolName: 'run_command', status: 'succeeded' });
    expect(result.content.length).toBeLessThan(maxOutputChars + 500);
    expect(result.content).toMatch(/^exit code 0\naaaa/);
    // The tail is kept, and the note says that (and about how much) was cut.
    expect(result.content).toContain('THE-END');
    expect(result.content).toMatch(/99[0-9 ,.]{3,}\d/);
    // Stored as capped as the model saw it.
    const stored = (await h!.storage.listMessages(h!.session.id)).find((m) => m.message.role === 'tool')!;
    expect(JSON.stringify(stored).length).toBeLessThan(maxOutputChars + 5_000);
  });

  it('a catastrophically backtracking grep pattern: stopped at grepTimeoutMs, the turn goes on', async () => {
    const root = await tempDir();
    await writeFile(path.join(root, 'a.txt'), `${'a'.repeat(64)}!\n`.repeat(50));
    const { result, ms } = await oneCall(root, { grepTimeoutMs: 300 }, 'grep', { pattern: '^(a+)+$' });
    expect(result).toMatchObject({ toolName: 'grep', status: 'failed' });
    expect(result.content).toMatch(/timed out after 300 ms/);
    // Unstopped, this pattern runs for longer than the universe has existed.
    expect(ms).toBeLessThan(15_000);
  });
});
