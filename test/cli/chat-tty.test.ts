import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { useTempDirs } from '../support/workspace.js';
import { killMarked, running, until } from './chat-process.js';
import { bundled } from '../support/bundles.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const HAS_TMUX = spawnSync('tmux', ['-V']).status === 0;
const tempDir = useTempDirs('turnchart-chat-tty-');

/** A program in a tmux pane: a real pseudo-terminal that the test types into and reads back. */
class Pane {
  private readonly socket = `turnchart-chat-${randomUUID()}`;

  /** Where the wrapping shell writes the program's exit status. */
  private readonly statusFile = path.join(os.tmpdir(), `${this.socket}.status`);

  /**
   * Runs `argv` in a new 120×40 pane; the pane stays (dead) after the program exits, to be read. A
   * shell around the program writes its exit status to a file: after the chat's Ctrl+D, tmux 3.3a
   * was seen to report its pane dead with `pane_dead_status` empty (read as 0 by `Number('')`, which
   * hid it until the field went missing altogether).
   */
  start(argv: string[]): void {
    const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;
    const command = ['sh', '-c', `"$@"; echo $? > ${quote(this.statusFile)}`, 'sh', ...argv].map(quote).join(' ');
    this.tmux('new-session', '-d', '-x', '120', '-y', '40', '-s', 'chat', '-c', ROOT, command, ';', 'set-option', '-t', 'chat', 'remain-on-exit', 'on');
  }

  /** The program's exit status once it has exited, else null. */
  exitStatus(): number | null {
    if (!existsSync(this.statusFile)) return null;
    const written = readFileSync(this.statusFile, 'utf8').trim();
    return /^\d+$/.test(written) ? Number(written) : null;
  }

  /** Literal text, then Enter. */
  type(text: string): void {
    this.tmux('send-keys', '-t', 'chat', '-l', text);
    this.tmux('send-keys', '-t', 'chat', 'Enter');
  }

  keys(...keys: string[]): void {
    this.tmux('send-keys', '-t', 'chat', ...keys);
  }

  /** The screen as text, wrapped lines joined. */
  screen(): string {
    return this.tmux('capture-pane', '-p', '-J', '-t', 'chat');
  }

  async waitFor(pattern: string | RegExp, timeoutMs = 30_000): Promise<void> {
    const test = (text: string) => (typeof pattern === 'string' ? text.includes(pattern) : pattern.test(text));
    await until(() => test(this.screen()), `${String(pattern)} on the screen`, timeoutMs).catch((error: Error) => {
      throw new Error(`${error.message}; the screen:\n${this.screen()}`);
    });
  }

  kill(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server']);
    rmSync(this.statusFile, { force: true });
  }

  private tmux(...args: string[]): string {
    const result = spawnSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`tmux ${args[0]} failed: ${result.stderr}`);
    return result.stdout;
  }
}

describe.skipIf(!HAS_TMUX)('turnchart chat in a terminal (tmux)', { timeout: 120_000 }, () => {
  const panes: Pane[] = [];
  const markers: string[] = [];
  afterEach(() => {
    for (const pane of panes.splice(0)) pane.kill();
    for (const marker of markers.splice(0)) killMarked(marker);
  });

  it('asks for approvals, shows a spinner while a tool runs, cancels on Ctrl+C and leaves on Ctrl+D', async () => {
    const workspace = await tempDir();
    const marker = `turnchart-chat-tty-${randomUUID()}`;
    markers.push(marker);
    const script = path.join(workspace, '.model.json');
    await writeFile(
      script,
      JSON.stringify([
        { text: 'I will write it.', toolCalls: [{ name: 'write_file', args: { path: 'tty-note.md', content: 'from the terminal' } }] },
        { text: 'Written.' },
        { text: 'Running it.', toolCalls: [{ name: 'run_command', args: { command: `sleep 600 # ${marker}` } }] },
      ]),
    );
    const pane = new Pane();
    panes.push(pane);
    const chat = [process.execPath, bundled('cli'), 'chat', '--db', path.join(workspace, 'chat.db'), '--workspace', workspace, '--model', `scripted:${script}`];
    pane.start(chat);
    await pane.waitFor(/^› ?$/m);
    expect(pane.screen()).toContain('(new, mode ask)');

    pane.type('please write a note');
    await pane.waitFor('[a]llow once / [d]eny ›');
    expect(pane.screen()).toContain('? write_file needs your approval: tty-note.md');
    pane.type('a');
    await pane.waitFor('✓ completed');
    expect(pane.screen()).toMatch(/allowed once\n\s+✓ write_file succeeded\nWritten\.\n✓ completed/);
    expect(await readFile(path.join(workspace, 'tty-note.md'), 'utf8')).toBe('from the terminal');

    pane.type('/mode auto');
    await pane.waitFor('mode: auto (from the next tool call on)');
    pane.type('run the long command');
    await pane.waitFor(`▸ run_command  sleep 600 # ${marker}`);
    await until(() => running(marker), 'the command to start');
    // On a terminal the spinner says what the turn does, under the output.
    await pane.waitFor(/^. running tools…$/m);

    pane.keys('C-c');
    await pane.waitFor('✗ cancelled');
    await until(() => !running(marker), 'the command to be killed');
    expect(pane.screen()).not.toContain('running tools…');
    await pane.waitFor(/✗ cancelled\n› ?$/m);

    pane.keys('C-d');
    await until(() => pane.exitStatus() !== null, 'the chat to exit');
    expect(pane.exitStatus()).toBe(0);
  });
});
