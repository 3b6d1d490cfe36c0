import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { AnyTool, ExecuteContext, ToolExecutionResult } from '../../../src/index.js';
import type { McpServers } from '../../../src/tools/mcp/index.js';

/** A `warn` that keeps every line and can wait for one matching a pattern (no sleeps: the promise resolves on the line). */
export class WarnLog {
  readonly lines: string[] = [];
  private readonly waiters: { pattern: RegExp; count: number; resolve: (line: string) => void }[] = [];

  readonly warn = (line: string): void => {
    this.lines.push(line);
    for (const waiter of [...this.waiters]) {
      if (this.matching(waiter.pattern) >= waiter.count) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };

  /** Resolves with the line that makes `count` lines matching `pattern` (the first such line by default). */
  waitFor(pattern: RegExp, count = 1): Promise<string> {
    const found = this.lines.filter((line) => pattern.test(line));
    if (found.length >= count) return Promise.resolve(found[count - 1]!);
    return new Promise((resolve) => this.waiters.push({ pattern, count, resolve }));
  }

  private matching(pattern: RegExp): number {
    return this.lines.filter((line) => pattern.test(line)).length;
  }
}

export function toolNamed(servers: McpServers, name: string): AnyTool {
  const tool = servers.tools().find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${servers.tools().map((t) => t.name).join(', ')}`);
  return tool;
}

/** Runs a tool as the runtime would: its arguments checked by `input` first (an invalid-arguments message otherwise). */
export async function run(
  tool: AnyTool,
  args: Record<string, unknown>,
  options: { signal?: AbortSignal; progress?: (p: unknown) => void; sessionId?: string; workspaceDir?: string } = {},
): Promise<ToolExecutionResult> {
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return { status: 'failed', content: `invalid arguments: ${z.prettifyError(parsed.error)}` };
  const ctx: ExecuteContext = {
    sessionId: options.sessionId ?? 'session',
    turnId: 'turn',
    toolCallId: 'call',
    signal: options.signal ?? new AbortController().signal,
    progress: options.progress ?? (() => undefined),
    approvedPaths: [],
    ...(options.workspaceDir !== undefined && { workspaceDir: options.workspaceDir }),
  };
  return tool.execute(parsed.data, ctx);
}

export async function tempDir(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
