import path from 'node:path';
import { TurnchartError } from '../../protocol/errors.js';
import { isStdioServer, WORKSPACE_PLACEHOLDER, type McpServerConfig } from './server-config.js';

/**
 * `${workspace}` in a stdio server's `args`, `cwd` or `env` values: the directory its calls work
 * in. A host-scoped server (and a session-scoped server's catalog) gets the host's workspace; a
 * session-scoped server's connection for a session gets that session's own directory — on a host
 * of many users, the user's — so a filesystem server rooted there keeps each user to their files,
 * as the workspace tools do. A URL server is reached, not started, so it takes none.
 */
export { WORKSPACE_PLACEHOLDER };

export function usesWorkspace(config: McpServerConfig): boolean {
  if (!isStdioServer(config)) return false;
  const values = [...(config.args ?? []), config.cwd ?? '', ...Object.values(config.env ?? {})];
  return values.some((value) => value.includes(WORKSPACE_PLACEHOLDER));
}

/** The config with every `${workspace}` replaced by `dir` (absolute); the config itself when it holds none. */
export function withWorkspace(config: McpServerConfig, dir: string): McpServerConfig {
  if (!isStdioServer(config) || !usesWorkspace(config)) return config;
  if (!path.isAbsolute(dir)) throw new TurnchartError('InvalidMcpServers', `a workspace for \${workspace} must be an absolute path, not '${dir}'`);
  const fill = (value: string) => value.replaceAll(WORKSPACE_PLACEHOLDER, dir);
  return {
    ...config,
    ...(config.args && { args: config.args.map(fill) }),
    ...(config.cwd !== undefined && { cwd: fill(config.cwd) }),
    ...(config.env && { env: Object.fromEntries(Object.entries(config.env).map(([name, value]) => [name, fill(value)])) }),
  };
}
