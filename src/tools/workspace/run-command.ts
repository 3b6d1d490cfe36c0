import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool, type AnyTool, type ToolExecutionResult } from '../define-tool.js';
import { confinementDescription } from '../sandbox/command-sandbox.js';
import { lifetimeDescription } from '../sandbox/containment.js';
import { runContained, type ContainedRun } from '../sandbox/run-contained.js';
import { workspaceOf, type Workspace } from './workspace.js';
import { OutputCollector } from './output-collector.js';

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
  const { containment, env, sandbox } = ws.commands;
  return defineTool({
    name: 'run_command',
    // Says the containment and the sandbox actually in force: the model plans around what it is told.
    description:
      'Run a shell command (`/bin/sh -c`) in the workspace root and return its exit code and output (stdout and ' +
      `stderr together). ${lifetimeDescription(containment)} It gets a minimal environment (PATH, HOME, locale, ` +
      `TERM and what the operator allowed), not the host's. ${confinementDescription(sandbox)}`,
    effect: 'execute',
    input,
    sandbox,
    execute: async (args, { signal, agentSandbox, workspaceDir }) => {
      const timeoutMs = args.timeoutMs ?? ws.limits.defaultTimeoutMs;
      const own = workspaceOf(ws, { workspaceDir });
      let cwd: string;
      let enclosing: string | undefined;
      try {
        cwd = await realpath(own.root);
        // A session in a directory of its own beneath the workspace (a user's): the sandbox shows it alone of the workspace.
        if (own !== ws) enclosing = await realpath(ws.root);
      } catch (error) {
        return { status: 'failed', content: `command not started: the workspace root cannot be resolved (${(error as Error).message})` };
      }
      const output = new OutputCollector(ws.limits.maxOutputChars);
      const run = await runContained(args.command, {
        cwd,
        env,
        containment,
        network: agentSandbox?.network ?? false,
        hidden: ws.hidden,
        ...(enclosing !== undefined && { enclosing }),
        timeoutMs,
        signal,
        killGraceMs: ws.limits.killGraceMs,
        onOutput: (chunk) => output.add(chunk),
      });
      return resultOf(run, output.text(), timeoutMs);
    },
  });
}

/** The output is already bounded by the collector; only a one-line header is added. */
function resultOf(run: ContainedRun, text: string, timeoutMs: number): ToolExecutionResult {
  if (run.ending === 'not_started') return { status: 'failed', content: `command not started: ${run.reason}` };
  const output = text === '' ? '(no output)' : text;
  if (run.ending === 'aborted') return { status: 'cancelled', content: `command cancelled; its process group was killed. Output until then:\n${output}` };
  if (run.ending === 'timed_out') {
    return { status: 'failed', content: `command timed out after ${timeoutMs} ms; its process group was killed. Output until then:\n${output}` };
  }
  const how = run.exitCode !== null ? `exit code ${run.exitCode}` : `killed by ${run.exitSignal ?? 'a signal'}`;
  return { status: run.exitCode === 0 ? 'succeeded' : 'failed', content: `${how}\n${output}` };
}
