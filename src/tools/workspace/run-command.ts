import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool, type AnyTool, type ToolExecutionResult } from '../define-tool.js';
import type { Workspace } from './workspace.js';
import { runInGroup, type GroupRun } from './process-group.js';

/** Below the kernel's limit on one argument (128 KiB). */
const MAX_COMMAND_CHARS = 100_000;

export function runCommandTool(ws: Workspace): AnyTool {
  const input = z.object({
    command: z
      .string()
      .min(1, 'the command is empty')
      .max(MAX_COMMAND_CHARS)
      .refine((command) => !command.includes('\0'), 'the command contains a NUL byte'),
    timeoutMs: z
      .number()
      .int()
      .min(1)
      .max(ws.limits.maxTimeoutMs)
      .optional()
      .describe(`milliseconds before the command is killed; default ${ws.limits.defaultTimeoutMs}`),
  });
  return defineTool({
    name: 'run_command',
    description:
      'Run a shell command (`/bin/sh -c`) in the workspace root and return its exit code and output (stdout and ' +
      'stderr together). Processes it leaves in the background are ended when it exits. The command itself is ' +
      'not confined to the workspace.',
    effect: 'execute',
    input,
    execute: async (args, { signal }) => {
      const run = await runInGroup(args.command, {
        cwd: await realpath(ws.root),
        timeoutMs: args.timeoutMs ?? ws.limits.defaultTimeoutMs,
        signal,
        killGraceMs: ws.limits.killGraceMs,
        maxOutputBytes: ws.limits.maxOutputChars,
      });
      return resultOf(run, args.timeoutMs ?? ws.limits.defaultTimeoutMs);
    },
  });
}

/** The output is already bounded by the collector; only a one-line header is added. */
function resultOf(run: GroupRun, timeoutMs: number): ToolExecutionResult {
  const output = run.output === '' ? '(no output)' : run.output;
  if (run.ending === 'aborted') return { status: 'cancelled', content: `command cancelled; its process group was killed. Output until then:\n${output}` };
  if (run.ending === 'timed_out') {
    return { status: 'failed', content: `command timed out after ${timeoutMs} ms; its process group was killed. Output until then:\n${output}` };
  }
  const how = run.exitCode !== null ? `exit code ${run.exitCode}` : `killed by ${run.exitSignal ?? 'a signal'}`;
  return { status: run.exitCode === 0 ? 'succeeded' : 'failed', content: `${how}\n${output}` };
}
