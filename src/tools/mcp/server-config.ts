import { z } from 'zod';
import { environmentNameSchema } from '../sandbox/command-environment.js';

/**
 * The `mcpServers` configuration: the MCP servers whose tools the host's agents may call, by name.
 * A server is a command the host starts (stdio) or a URL it connects to (Streamable HTTP). The name
 * prefixes its tools (`<server>__<tool>`), so it is limited to what a model's tool names allow and
 * may not hold the separator itself: `a__b` + `c` and `a` + `b__c` would otherwise name the same tool.
 */

const mcpServerNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'an MCP server name: 1 to 64 letters, digits, _ or -')
  .refine((name) => !name.includes('__'), 'an MCP server name may not contain "__" (it separates the server from the tool)');

const effectSchema = z.enum(['read', 'write', 'execute']);

/** 2^31 - 1: the largest delay a Node timer takes. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/** What every server takes, however it is reached. */
const common = {
  /** The host refuses to start when this server cannot be started or reached (default: a warning, and its tools are absent). */
  required: z.boolean().optional(),
  /** `host` (default): one connection shared by every session; `session`: one per session, started on its first call (`SessionConnections`). */
  scope: z.enum(['host', 'session']).optional(),
  /** The time limit of one call of its tools (ms), instead of the agent's `toolTimeoutMs`. */
  timeoutMs: z.number().int().positive().max(MAX_TIMEOUT_MS).optional(),
  /** Per tool (its MCP name, without the prefix): an effect that overrides the one its annotations give. */
  tools: z.record(z.string().min(1).max(128), z.strictObject({ effect: effectSchema.optional() })).optional(),
};

const stdioServerSchema = z.strictObject({
  /** The program to run (found on PATH); started without a shell. */
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  /** Variables it gets besides the SDK's default few (HOME, LOGNAME, PATH, SHELL, TERM, USER); never the host's own secrets. */
  env: z.record(environmentNameSchema, z.string()).optional(),
  /** Its working directory (default: the host's). */
  cwd: z.string().min(1).optional(),
  ...common,
});

/** Filled in with a directory where a stdio server is started (`workspace-placeholder.ts`); a URL server is only reached, so it takes none. */
export const WORKSPACE_PLACEHOLDER = '${workspace}';
const noPlaceholder = (value: string) => !value.includes(WORKSPACE_PLACEHOLDER);
const PLACEHOLDER_ERROR = `${WORKSPACE_PLACEHOLDER} is filled in only in a stdio server's args, cwd and env`;

const httpServerSchema = z.strictObject({
  /** A Streamable HTTP endpoint. */
  url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }).refine(noPlaceholder, PLACEHOLDER_ERROR),
  /** Sent with every request (an `Authorization` header, say). */
  headers: z.record(z.string().min(1), z.string().refine(noPlaceholder, PLACEHOLDER_ERROR)).optional(),
  ...common,
});

const mcpServerSchema = z.union([stdioServerSchema, httpServerSchema]);

export const mcpServersSchema = z.record(mcpServerNameSchema, mcpServerSchema);

/** As a config file or an embedder writes it. */
export type McpServersConfig = z.input<typeof mcpServersSchema>;
export type McpServerConfig = z.output<typeof mcpServerSchema>;
type StdioServerConfig = z.output<typeof stdioServerSchema>;

export function isStdioServer(config: McpServerConfig): config is StdioServerConfig {
  return 'command' in config;
}
