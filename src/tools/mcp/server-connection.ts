import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  type CallToolResult,
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type Progress,
  type Tool as McpToolInfo,
} from '@modelcontextprotocol/sdk/types.js';
import type { ToolExecutionResult } from '../define-tool.js';
import { messageOf } from '../../protocol/error-message.js';
import { callResultOf } from './call-result.js';
import { GroupStdioTransport, serverMarker } from './group-stdio-transport.js';
import { OrderedTransport } from './ordered-transport.js';
import { isStdioServer, type McpServerConfig } from './server-config.js';
import { serverEnvironment } from './server-environment.js';

export type { McpToolInfo };

/**
 * One MCP server as the host holds it: started (stdio) or connected (Streamable HTTP) once, its
 * tool list kept and refreshed on `notifications/tools/list_changed`, and calls made with the
 * turn's signal (a cancel sends `notifications/cancelled`), the tool's time limit and progress.
 *
 * It never throws at a caller after it first connected: a server that exits or drops the connection
 * fails the calls under way with a result naming it (`MCP server 'files' exited (code 1)`), and the
 * next call starts it again — at once the first time, then after a backoff that doubles up to 30 s
 * while it keeps failing (a call within the backoff fails at once, saying when it will be tried).
 * Its last tool list stays offered meanwhile, so the model can still call it and so restart it.
 */

export interface ConnectionOptions {
  warn: (message: string) => void;
  /** Values that must never reach a server's environment (`serverEnvironment`). */
  secrets?: readonly (string | null | undefined)[];
  ledgerDir?: string;
  /** How long starting a server and its `initialize` may take (default 30 s). */
  connectTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL on close (default 2 s). */
  killGraceMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** The SDK's own timeout for the request; the runtime's time limit aborts `signal` first or at the same time. */
  timeoutMs?: number;
  onProgress?: (progress: Progress) => void;
}

/** No SDK timeout of its own: the turn's signal and the tool's time limit decide (2^31 - 1 ms, the largest timer). */
const NO_TIMEOUT_MS = 2_147_483_647;
const MAX_BACKOFF_MS = 30_000;
const FIRST_BACKOFF_MS = 500;
/** Stderr lines passed to `warn` per minute; the rest are counted and the count said once the minute is over. */
const STDERR_LINES_PER_MINUTE = 100;

interface Live {
  client: Client;
  transport: OrderedTransport;
  /** Set when the host closes it on purpose: its end is not a failure. */
  closing: boolean;
}

export class ServerConnection {
  private live: Live | null = null;
  private connecting: Promise<Live> | null = null;
  private toolList: McpToolInfo[] = [];
  private readonly listeners = new Set<() => void>();
  /** Unplanned ends and failed starts in a row: the backoff before the next start. */
  private failures = 0;
  private nextStartAtMs = 0;
  /** Why it last ended or could not start, for the calls that find it down. */
  private lastFailure: string | null = null;
  private shut = false;
  private readonly stderrWindow = { startedAtMs: 0, lines: 0, dropped: 0 };

  constructor(
    readonly name: string,
    readonly config: McpServerConfig,
    private readonly options: ConnectionOptions,
  ) {}

  /** The server's tools as it last listed them. */
  tools(): readonly McpToolInfo[] {
    return this.toolList;
  }

  /** Called after the tool list changed (a `list_changed`, or a restart that lists other tools). */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The pid of a stdio server's process while it runs (tests look for it after close). */
  get pid(): number | null {
    const transport = this.live?.transport.inner;
    return transport instanceof GroupStdioTransport ? transport.pid : null;
  }

  /** The MCP session id a Streamable HTTP server gave this connection, while it is connected. */
  get httpSessionId(): string | null {
    const transport = this.live?.transport.inner;
    return transport instanceof StreamableHTTPClientTransport ? (transport.sessionId ?? null) : null;
  }

  /** Starts or connects it and lists its tools; rejects with the reason when it cannot. */
  async start(): Promise<void> {
    await this.ensureLive();
  }

  /** Calls one of its tools; always resolves with a result (failed when the server could not answer). */
  async call(tool: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<ToolExecutionResult> {
    if (options.signal?.aborted) return cancelled();
    let live: Live;
    try {
      live = await this.ensureLive();
    } catch (error) {
      return { status: 'failed', content: messageOf(error) };
    }
    try {
      const result = await live.client.callTool({ name: tool, arguments: args }, CallToolResultSchema, {
        ...(options.signal && { signal: options.signal }),
        timeout: options.timeoutMs ?? NO_TIMEOUT_MS,
        ...(options.onProgress && { onprogress: options.onProgress }),
      });
      this.failures = 0;
      // Parsed with CallToolResultSchema: never the legacy `toolResult` shape the return type also allows.
      return callResultOf(result as CallToolResult);
    } catch (error) {
      if (options.signal?.aborted) return cancelled();
      return { status: 'failed', content: this.callFailure(live, tool, error, options.timeoutMs) };
    }
  }

  /** Ends the server (its whole process group) or the HTTP session; later calls fail. */
  async close(): Promise<void> {
    this.shut = true;
    const live = this.live ?? (await this.connecting?.catch(() => null)) ?? null;
    this.live = null;
    if (!live) return;
    live.closing = true;
    await live.client.close().catch(() => undefined);
    await live.transport.close().catch(() => undefined);
  }

  private callFailure(live: Live, tool: string, error: unknown, timeoutMs: number | undefined): string {
    if (error instanceof McpError && error.code === Number(ErrorCode.RequestTimeout)) {
      return `MCP server '${this.name}' did not answer '${tool}' within ${timeoutMs ?? NO_TIMEOUT_MS} ms`;
    }
    if (error instanceof McpError && error.code === Number(ErrorCode.ConnectionClosed)) {
      return this.endedReason(live);
    }
    if (error instanceof McpError) return `MCP server '${this.name}' refused '${tool}': ${error.message}`;
    // Anything else is the transport failing (an HTTP server gone, a broken pipe): the next call connects afresh.
    this.dropped(live, `MCP server '${this.name}' could not be reached: ${messageOf(error)}`);
    void live.transport.close().catch(() => undefined);
    return this.lastFailure!;
  }

  private ensureLive(): Promise<Live> {
    if (this.shut) return Promise.reject(new Error(`MCP server '${this.name}' is closed`));
    if (this.live) return Promise.resolve(this.live);
    const wait = this.nextStartAtMs - Date.now();
    if (wait > 0) {
      return Promise.reject(new Error(`${this.lastFailure ?? `MCP server '${this.name}' is down`}; it will be started again in ${Math.ceil(wait / 1000)} s`));
    }
    return (this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    }));
  }

  private async connect(): Promise<Live> {
    const transport = new OrderedTransport(this.transport());
    const client = new Client({ name: 'turnchart', version: '1' }, { capabilities: {} });
    const live: Live = { client, transport, closing: false };
    client.onclose = () => this.dropped(live, this.endedReason(live));
    // Protocol noise (an unknown progress token, a late response) is no failure of the call; transport errors end in onclose.
    client.onerror = () => undefined;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      void this.refresh(live);
    });
    try {
      await client.connect(transport, { timeout: this.options.connectTimeoutMs ?? 30_000 });
      const tools = await this.listAll(client);
      if (this.shut) throw new Error(`MCP server '${this.name}' is closed`);
      this.live = live;
      this.setTools(tools);
      return live;
    } catch (error) {
      live.closing = true;
      await client.close().catch(() => undefined);
      await transport.close().catch(() => undefined);
      const reason = `MCP server '${this.name}' could not be started: ${this.startFailure(transport, error)}`;
      this.failed(reason);
      throw new Error(reason, { cause: error });
    }
  }

  private transport(): Transport {
    const { config } = this;
    if (!isStdioServer(config)) {
      return new StreamableHTTPClientTransport(new URL(config.url), { ...(config.headers && { requestInit: { headers: config.headers } }) });
    }
    const marker = serverMarker();
    return new GroupStdioTransport({
      command: config.command,
      args: config.args ?? [],
      env: serverEnvironment(this.name, config.env ?? {}, { marker, secrets: this.options.secrets ?? [] }),
      ...(config.cwd !== undefined && { cwd: config.cwd }),
      marker,
      ...(this.options.ledgerDir !== undefined && { ledgerDir: this.options.ledgerDir }),
      ...(this.options.killGraceMs !== undefined && { killGraceMs: this.options.killGraceMs }),
      onStderrLine: (line) => this.stderrLine(line),
    });
  }

  private startFailure(transport: OrderedTransport, error: unknown): string {
    const inner = transport.inner;
    if (inner instanceof GroupStdioTransport && inner.exit) return `it exited (${exitText(inner.exit)})`;
    return messageOf(error);
  }

  private async listAll(client: Client): Promise<McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined && tools.length < 10_000);
    return tools;
  }

  private async refresh(live: Live): Promise<void> {
    try {
      const tools = await this.listAll(live.client);
      if (this.live === live) this.setTools(tools);
    } catch (error) {
      if (this.live === live) this.options.warn(`[mcp:${this.name}] could not list its tools after list_changed: ${messageOf(error)}`);
    }
  }

  private setTools(tools: McpToolInfo[]): void {
    const changed = JSON.stringify(tools) !== JSON.stringify(this.toolList);
    this.toolList = tools;
    if (changed) for (const listener of this.listeners) listener();
  }

  private endedReason(live: Live): string {
    const transport = live.transport.inner;
    if (transport instanceof GroupStdioTransport && transport.exit) return `MCP server '${this.name}' exited (${exitText(transport.exit)})`;
    return `MCP server '${this.name}' closed the connection`;
  }

  /** An unplanned end: the calls under way fail (the SDK rejects them), the next call starts it again. */
  private dropped(live: Live, reason: string): void {
    if (live.closing || this.live !== live) return;
    this.live = null;
    this.failed(reason);
    this.options.warn(`${reason}; it will be started again on its next use`);
  }

  private failed(reason: string): void {
    this.lastFailure = reason;
    this.failures += 1;
    // The first restart is at once (a crash that a retry fixes); then 0.5 s, 1 s, 2 s … 30 s.
    const delay = this.failures <= 1 ? 0 : Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.failures - 2));
    this.nextStartAtMs = Date.now() + delay;
  }

  private stderrLine(line: string): void {
    const window = this.stderrWindow;
    const now = Date.now();
    if (now - window.startedAtMs >= 60_000) {
      if (window.dropped > 0) this.options.warn(`[mcp:${this.name}] … ${window.dropped} more stderr line(s) not shown`);
      Object.assign(window, { startedAtMs: now, lines: 0, dropped: 0 });
    }
    if (window.lines >= STDERR_LINES_PER_MINUTE) {
      window.dropped += 1;
      return;
    }
    window.lines += 1;
    this.options.warn(`[mcp:${this.name}] ${line}`);
  }
}

function cancelled(): ToolExecutionResult {
  return { status: 'cancelled', content: 'the call was cancelled' };
}

function exitText(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  return exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal ?? 'unknown'}`;
}
