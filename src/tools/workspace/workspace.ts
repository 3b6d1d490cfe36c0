import { realpathSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { TurnchartError } from '../../protocol/errors.js';
import { isInside } from './confine.js';
import { commandSettings, type CommandOptions, type CommandSettings } from '../sandbox/command-settings.js';

const positiveInt = z.number().int().positive();

/** The workspace tools' default output bound, which MCP tools' results share (`src/tools/mcp/call-result.ts`). */
export const DEFAULT_MAX_OUTPUT_CHARS = 50_000;

// Strict, so a misspelt limit is an error rather than a default silently kept.
const limitsSchema = z.strictObject({
  /** Characters of output a tool returns before it is cut; the note saying what was cut comes on top. */
  maxOutputChars: positiveInt.default(DEFAULT_MAX_OUTPUT_CHARS),
  /** Bytes read from one file: read_file reads no more, edit_file and grep skip larger files. */
  maxFileBytes: positiveInt.default(5 * 1024 * 1024),
  /** Characters of one line shown (read_file, grep) and searched (grep). */
  maxLineChars: positiveInt.default(2_000),
  /** Files grep searches before it stops. */
  maxGrepFiles: positiveInt.default(5_000),
  /** Matching lines grep reports before it stops. */
  maxGrepMatches: positiveInt.default(500),
  /** Wall time for one grep: bounds a pattern that backtracks catastrophically. */
  grepTimeoutMs: positiveInt.default(10_000),
  /** run_command's timeout when the call gives none. */
  defaultTimeoutMs: positiveInt.default(120_000),
  /** The largest timeout a call may ask for. */
  maxTimeoutMs: positiveInt.default(600_000),
  /** Between SIGTERM and SIGKILL when a command is stopped. */
  killGraceMs: z.number().int().nonnegative().default(2_000),
});

export type WorkspaceLimits = z.output<typeof limitsSchema>;

export type WorkspaceToolsOptions = {
  root: string;
  /**
   * Absolute paths (files or directories) the tools treat as not theirs: the host's own database
   * and the like, when they lie inside the workspace. The path tools refuse them and everything
   * beneath them (by name and by real path, so neither `..` nor a symbolic link leads in), listings
   * and grep's walk pass over them, and under the bubblewrap sandbox they are covered (a directory
   * by an empty read-only tmpfs, a file by /dev/null). Without a sandbox a command still reaches them.
   */
  hiddenPaths?: readonly string[];
} & Partial<WorkspaceLimits> & CommandOptions;

/** What every workspace tool is built from: the root (absolute, not yet real) and the limits. */
export interface Workspace {
  root: string;
  limits: WorkspaceLimits;
  /** run_command's environment, sandbox and containment, settled when the tools are built. */
  commands: CommandSettings;
  /** `hiddenPaths`, normalized: never reached by a tool, covered in the sandbox. */
  hidden: readonly string[];
}

const hiddenPathsSchema = z
  .array(
    z
      .string()
      .min(1)
      .refine((given) => !given.includes('\0'), 'a hidden path contains a NUL byte')
      .refine((given) => path.isAbsolute(given), 'a hidden path must be absolute'),
  )
  .max(100)
  .default([]);

/** Checks the options once, when the tools are built, so a bad limit is a startup error and not a tool failure. */
export function workspaceFrom(options: WorkspaceToolsOptions): Workspace {
  const { root, commandEnv, hostSecrets, commandContainment, sandbox, warn, hiddenPaths, ...rest } = options;
  if (typeof root !== 'string' || root.length === 0 || root.includes('\0')) {
    throw new TurnchartError('InvalidWorkspaceOptions', 'workspaceTools needs a root directory path');
  }
  const parsed = limitsSchema.safeParse(rest);
  if (!parsed.success) throw new TurnchartError('InvalidWorkspaceOptions', z.prettifyError(parsed.error));
  if (parsed.data.defaultTimeoutMs > parsed.data.maxTimeoutMs) {
    throw new TurnchartError('InvalidWorkspaceOptions', 'defaultTimeoutMs is larger than maxTimeoutMs');
  }
  const hidden = hiddenPathsOf(path.resolve(root), hiddenPaths);
  const commands = commandSettings({ commandEnv, hostSecrets, commandContainment, sandbox, warn });
  return { root: path.resolve(root), limits: parsed.data, commands, hidden };
}

/**
 * The workspace one call works in: the session's own directory (`createSession({ workspaceDir })`;
 * a host with many users gives each one under its workspace) when it lies beneath the tools' root,
 * else the root itself. A session's directory outside the root does not widen what the tools reach.
 */
export function workspaceOf(ws: Workspace, ctx: { workspaceDir?: string }): Workspace {
  const dir = ctx.workspaceDir === undefined ? undefined : path.resolve(ctx.workspaceDir);
  if (dir === undefined || dir === ws.root || !isInside(ws.root, dir)) return ws;
  return { ...ws, root: dir };
}

/** The hidden paths, normalized; one that is the root or above it would hide the whole workspace, which is an embedder's mistake. */
function hiddenPathsOf(root: string, given: unknown): string[] {
  const parsed = hiddenPathsSchema.safeParse(given);
  if (!parsed.success) throw new TurnchartError('InvalidWorkspaceOptions', `hiddenPaths: ${z.prettifyError(parsed.error)}`);
  const hidden = [...new Set(parsed.data.map((one) => path.resolve(one)))];
  const realRoot = realOrNull(root);
  for (const one of hidden) {
    const realOne = realOrNull(one);
    if (isInside(one, root) || (realOne !== null && realRoot !== null && isInside(realOne, realRoot))) {
      throw new TurnchartError('InvalidWorkspaceOptions', `hiddenPaths: ${one} holds the workspace itself (${root}); hide the files in it instead`);
    }
  }
  return hidden;
}

function realOrNull(given: string): string | null {
  try {
    return realpathSync(given);
  } catch {
    return null;
  }
}
