import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { recordCommand, type LedgerRecord } from '../sandbox/command-ledger.js';
import { killMarked, signalGroup } from '../sandbox/process-table.js';

/**
 * The stdio transport of an MCP server the host starts, in place of the SDK's
 * `StdioClientTransport`, which spawns the server in the host's own process group and on close
 * signals only the server itself: whatever the server started (an `npx` wrapper's node, a
 * language server) would outlive the host. Here the server leads a process group of its own
 * (`detached`), and closing it — or its leader exiting — ends the whole group; its processes carry
 * the command marker and the server is written in the command ledger, so a host SIGKILLed with a
 * server running has it reaped at its next start, like run_command's commands
 * (`reapLeftoverCommands`). Framing is the SDK's own (`ReadBuffer`, `serializeMessage`).
 */

interface GroupStdioOptions {
  command: string;
  args: readonly string[];
  /** The whole environment (`serverEnvironment`), the marker included. */
  env: Record<string, string>;
  cwd?: string;
  /** The value of the marker variable in `env`: what the ledger records. */
  marker: string;
  ledgerDir?: string;
  /** Each line the server writes to its stderr. */
  onStderrLine: (line: string) => void;
  /** Between SIGTERM and SIGKILL when it is closed. */
  killGraceMs?: number;
}

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One stderr line longer than this is cut (a server printing a megabyte without a newline). */
const MAX_STDERR_LINE = 2_000;

export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcess | null = null;
  private readonly buffer = new ReadBuffer();
  private record: LedgerRecord | null = null;
  private closed: Promise<void> | null = null;
  private ended!: Promise<void>;
  /** How the server's process ended; null while it runs. */
  exit: ExitInfo | null = null;

  constructor(private readonly options: GroupStdioOptions) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  async start(): Promise<void> {
    if (this.child) throw new Error('already started');
    // Recorded before it is spawned: there is no moment it runs unrecorded.
    this.record = await recordCommand(this.options.marker, 'process-group', this.options.ledgerDir);
    const child = spawn(this.options.command, [...this.options.args], {
      env: this.options.env,
      ...(this.options.cwd !== undefined && { cwd: this.options.cwd }),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      windowsHide: true,
    });
    this.child = child;
    this.ended = new Promise((resolve) => child.once('close', () => resolve()));
    child.on('exit', (code, signal) => {
      this.exit = { code, signal };
      // Its children go with it: a server that exited has nothing left to answer for. Its pipes close once they are gone.
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
    });
    child.once('close', () => {
      void this.record?.close();
      this.onclose?.();
    });
    child.stdin.on('error', (error) => this.onerror?.(error));
    child.stdout.on('data', (chunk: Buffer) => {
      try {
        this.buffer.append(chunk);
        for (let message = this.buffer.readMessage(); message !== null; message = this.buffer.readMessage()) this.onmessage?.(message);
      } catch (error) {
        this.onerror?.(error as Error);
      }
    });
    let partial = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      if (partial.length > MAX_STDERR_LINE) {
        lines.push(partial);
        partial = '';
      }
      for (const line of lines) if (line.trim() !== '') this.options.onStderrLine(line.length > MAX_STDERR_LINE ? `${line.slice(0, MAX_STDERR_LINE)} …` : line);
    });
    child.stderr.on('end', () => {
      if (partial.trim() !== '') this.options.onStderrLine(partial);
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => {
        this.record?.started(child.pid!);
        resolve();
      });
      child.once('error', (error) => {
        void this.record?.close();
        reject(error);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.exit || stdin.destroyed) return Promise.reject(new Error('the MCP server is not running'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Ends the server: stdin closed and SIGTERM to its group, SIGKILL after the grace; resolves once its processes are gone. */
  close(): Promise<void> {
    return (this.closed ??= this.stop());
  }

  private async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.pid === undefined) return;
    const pid = child.pid;
    child.stdin?.end();
    signalGroup(pid, 'SIGTERM');
    const grace = new Promise<void>((resolve) => setTimeout(resolve, this.options.killGraceMs ?? 2_000).unref());
    await Promise.race([this.ended, grace]);
    signalGroup(pid, 'SIGKILL');
    // A process that left the group (setsid) still carries the marker.
    await killMarked([this.options.marker]);
    await this.ended;
    this.buffer.clear();
    await this.record?.close();
  }
}

/** A marker for one server process: the ledger's entry name and the value of the marker variable. */
export function serverMarker(): string {
  return `mcp-${randomUUID()}`;
}
