import type { AnyTool } from './define-tool.js';

/**
 * Tools whose list changes while the runtime runs: an MCP server's, refreshed when it sends
 * `notifications/tools/list_changed`. The runtime reads `tools()` when it builds a model request and
 * when it resolves a call, and rebuilds its tool definitions when a source says it changed.
 */
export interface ToolSource {
  /** A name for messages (`mcp:github`). */
  readonly name: string;
  /** The tools now; a name may not clash with another source's or a registry tool's. */
  tools(): readonly AnyTool[];
  /** Calls `listener` after the list changed; answers the unsubscribe. */
  subscribe(listener: () => void): () => void;
}
