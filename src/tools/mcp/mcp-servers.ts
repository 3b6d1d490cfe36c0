import { z } from 'zod';
import { TurnchartError } from '../../protocol/errors.js';
import { messageOf } from '../../protocol/error-message.js';
import type { AnyTool } from '../define-tool.js';
import type { ToolSource } from '../tool-source.js';
import { exposedToolName, mcpTool, type McpCall } from './mcp-tool.js';
import { isStdioServer, mcpServersSchema, type McpServerConfig, type McpServersConfig } from './server-config.js';
import { checkServerEnvironment } from './server-environment.js';
import { ServerConnection, type ConnectionOptions } from './server-connection.js';
import { SessionConnections, type SessionScopeOptions } from './session-connections.js';
import { usesWorkspace, withWorkspace, WORKSPACE_PLACEHOLDER } from './workspace-placeholder.js';

/**
 * The host's MCP servers, each a `ToolSource` named `mcp:<server>` whose tools are its
 * `<server>__<tool>` wrappers, rebuilt when its list changes. A server that cannot start is a
 * warning and offers no tools; with `required: true`, `start` rejects (after closing the others).
 * `close` ends them all.
 *
 * - `scope: "host"` (default): started or connected once, at `start`, and shared by every session.
 * - `scope: "session"`: connected at `start` only to list its tools (the catalog, never called);
 *   each session's calls go to a connection of its own, started on its first call and closed by
 *   `closeSession`, after `sessionIdleMs` unused, or past `maxSessionConnections` (the least
 *   recently used first) — see `SessionConnections`.
 *
 * A stdio server's `args`, `cwd` and `env` may name `${workspace}` (see `workspace-placeholder.ts`).
 */

export interface McpServersOptions extends Omit<ConnectionOptions, 'warn'>, SessionScopeOptions {
  warn?: (message: string) => void;
  /** The host's workspace (absolute): `${workspace}` of a host-scoped server, and of a session without a directory of its own. */
  workspace?: string;
}

export class McpServers {
  private constructor(
    private readonly servers: readonly McpServerSource[],
    /** Every server configured, those that could not start included (their tools absent); a session-scoped server's is its catalog. */
    readonly connections: readonly ServerConnection[],
    /** The per-session connections of each session-scoped server that started. */
    private readonly sessionScoped: readonly SessionConnections[],
  ) {}

  /** Checks the config (a typed `InvalidMcpServers` error), then starts every server at once. */
  static async start(config: McpServersConfig, options: McpServersOptions = {}): Promise<McpServers> {
    const warn = options.warn ?? ((message: string) => console.warn(`turnchart: ${message}`));
    const parsed = mcpServersSchema.safeParse(config);
    if (!parsed.success) throw new TurnchartError('InvalidMcpServers', `mcpServers: ${z.prettifyError(parsed.error)}`);
    const entries = Object.entries(parsed.data);
    // Every server's environment is checked before any starts: a config naming a host secret is refused whole.
    for (const [name, server] of entries) if (isStdioServer(server)) checkServerEnvironment(name, server.env ?? {}, options.secrets ?? []);
    const unplaced = entries.find(([, server]) => usesWorkspace(server) && options.workspace === undefined);
    if (unplaced) throw new TurnchartError('InvalidMcpServers', `mcpServers.${unplaced[0]}: names ${WORKSPACE_PLACEHOLDER}, but no workspace was given`);
    const hostWorkspace = options.workspace;
    const placed = (server: McpServerConfig) => (hostWorkspace === undefined ? server : withWorkspace(server, hostWorkspace));
    const connectionOptions: ConnectionOptions = {
      warn,
      ...(options.secrets && { secrets: options.secrets }),
      ...(options.ledgerDir !== undefined && { ledgerDir: options.ledgerDir }),
      ...(options.connectTimeoutMs !== undefined && { connectTimeoutMs: options.connectTimeoutMs }),
      ...(options.killGraceMs !== undefined && { killGraceMs: options.killGraceMs }),
    };
    const connections = entries.map(([name, server]) => new ServerConnection(name, placed(server), connectionOptions));
    const started = await Promise.all(connections.map((connection) => connection.start().then(() => null, (error: unknown) => error)));
    const required = connections.flatMap((connection, i) => (started[i] !== null && connection.config.required === true ? [[connection, started[i]] as const] : []));
    if (required.length > 0) {
      await Promise.all(connections.map((connection) => connection.close()));
      const [connection, error] = required[0]!;
      throw new TurnchartError('McpServerUnavailable', `${messageOf(error)} (mcpServers.${connection.name} is required)`, { cause: error });
    }
    connections.forEach((connection, i) => {
      if (started[i] !== null) warn(`${messageOf(started[i])}; its tools are not offered`);
    });
    const sessionScoped: SessionConnections[] = [];
    const sources = connections
      .filter((_, i) => started[i] === null)
      .map((connection) => {
        if (connection.config.scope !== 'session') return new McpServerSource(connection, connection.call.bind(connection), warn);
        // Each session's connection is placed in the session's own directory; the catalog's is the host's.
        const template = parsed.data[connection.name]!;
        const sessions = new SessionConnections(connection, connectionOptions, options, (dir) => (dir === undefined ? placed(template) : withWorkspace(template, dir)));
        sessionScoped.push(sessions);
        return new McpServerSource(connection, sessions.call.bind(sessions), warn);
      });
    return new McpServers(sources, connections, sessionScoped);
  }

  /** One tool source per server that started. */
  get sources(): readonly ToolSource[] {
    return this.servers;
  }

  /** The source of one server, if it started. */
  source(server: string): ToolSource | undefined {
    return this.servers.find((source) => source.server === server);
  }

  /** Every tool of every server, as they are now. */
  tools(): AnyTool[] {
    return this.servers.flatMap((source) => [...source.tools()]);
  }

  /** The per-session connections of a session-scoped server, if it started. */
  sessionConnections(server: string): SessionConnections | undefined {
    return this.sessionScoped.find((sessions) => sessions.name === server);
  }

  /** Closes the session's own connection to every session-scoped server (the host calls it when the session closes). */
  async closeSession(sessionId: string): Promise<void> {
    await Promise.all(this.sessionScoped.map((sessions) => sessions.closeSession(sessionId)));
  }

  /** Ends every server (and whatever it started), every session's own included; leaves no child process behind. */
  async close(): Promise<void> {
    await Promise.all([...this.sessionScoped.map((sessions) => sessions.close()), ...this.connections.map((connection) => connection.close())]);
  }
}

/** One server's tools, as the runtime reads them. */
class McpServerSource implements ToolSource {
  readonly name: string;
  private current: AnyTool[] = [];
  /** The wrapper of each tool as last listed: an unchanged tool keeps its object (and its compiled validator, and the runtime's cached definition). */
  private built = new Map<string, { listed: string; tool: AnyTool }>();

  constructor(
    /** Whose tool list it offers (a session-scoped server's catalog). */
    private readonly connection: ServerConnection,
    /** Where its tools' calls go. */
    private readonly call: McpCall,
    private readonly warn: (message: string) => void,
  ) {
    this.name = `mcp:${connection.name}`;
    this.rebuild();
    // Kept for the connection's life, which is this source's: rebuilt before any listener of the runtime hears of it.
    connection.subscribe(() => this.rebuild());
  }

  get server(): string {
    return this.connection.name;
  }

  tools(): readonly AnyTool[] {
    return this.current;
  }

  subscribe(listener: () => void): () => void {
    return this.connection.subscribe(listener);
  }

  private rebuild(): void {
    const { connection } = this;
    const config: McpServerConfig = connection.config;
    const seen = new Set<string>();
    const tools: AnyTool[] = [];
    const built = new Map<string, { listed: string; tool: AnyTool }>();
    for (const info of connection.tools()) {
      const name = exposedToolName(connection.name, info.name);
      if (name === null || seen.has(name)) {
        this.warn(`[mcp:${connection.name}] its tool '${info.name}' is not offered: ${name === null ? 'the name is too long' : `another of its tools is also offered as ${name}`}`);
        continue;
      }
      seen.add(name);
      const listed = JSON.stringify(info);
      const kept = this.built.get(name);
      const effect = config.tools?.[info.name]?.effect;
      const tool =
        kept?.listed === listed
          ? kept.tool
          : mcpTool(name, connection.name, info, this.call, { ...(effect && { effect }), ...(config.timeoutMs !== undefined && { timeoutMs: config.timeoutMs }) }, this.warn);
      built.set(name, { listed, tool });
      tools.push(tool);
    }
    this.built = built;
    this.current = tools;
  }
}
