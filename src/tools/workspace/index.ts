import type { AnyTool } from '../define-tool.js';
import { editFileTool } from './edit-file.js';
import { grepTool } from './grep.js';
import { workspaceFrom, type WorkspaceToolsOptions } from './workspace.js';
import { listDirTool } from './list-dir.js';
import { readFileTool } from './read-file.js';
import { runCommandTool } from './run-command.js';
import { writeFileTool } from './write-file.js';

export type { WorkspaceLimits, WorkspaceToolsOptions } from './workspace.js';
export { sqliteStatePaths } from './host-state.js';

/** The names `workspaceTools` gives its tools, in its order: what a configuration file may pick from without building them. */
export const WORKSPACE_TOOL_NAMES = ['read_file', 'list_dir', 'grep', 'write_file', 'edit_file', 'run_command'] as const;

/**
 * The tools an agent needs to work in one directory: read_file, list_dir, grep (read),
 * write_file, edit_file (write) and run_command (execute). Every path is confined to the real
 * path of `root`: an escape is rule-denied by the tool's `authorize` hook and checked again when
 * the tool runs. Allowed calls are then subject to the session's permission mode by their effect.
 * `hiddenPaths` (the host's own database, `sqliteStatePaths`) are refused, skipped by listings and
 * grep, and covered in run_command's sandbox.
 */
export function workspaceTools(options: WorkspaceToolsOptions): AnyTool[] {
  const ws = workspaceFrom(options);
  return [readFileTool(ws), listDirTool(ws), grepTool(ws), writeFileTool(ws), editFileTool(ws), runCommandTool(ws)];
}
