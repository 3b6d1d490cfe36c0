/** MCP servers as tools (issue 24): the config schema the config file and `startHost` take, and the servers' tool sources. */
export { mcpServersSchema, type McpServersConfig } from './server-config.js';
export { McpServers, type McpServersOptions } from './mcp-servers.js';
export { usesWorkspace } from './workspace-placeholder.js';
