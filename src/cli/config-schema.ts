import type { LanguageModelV3 } from '@ai-sdk/provider';
import { z } from 'zod';
import { idSchema, permissionModeSchema } from '../protocol/commands.js';
import type { AnyTool } from '../tools/define-tool.js';
import { mcpServersSchema } from '../tools/mcp/server-config.js';
import { sandboxChoiceSchema } from '../tools/sandbox/command-sandbox.js';
import { agentSandboxSchema } from '../protocol/sandbox.js';
import { guardrailsSchema } from '../runtime/guardrail-profiles.js';
import { agentDataSettings } from '../runtime/agents.js';
import { permissionRulesSchema } from '../tools/permission-rules.js';
import { logFormatSchema, logLevelSchema } from '../host/logger.js';
import type { PermissionRules } from '../protocol/permission-rule.js';

/**
 * The shape of `turnchart.config.ts` (and `.mjs`, `.js`, `.json`): every `serve` flag as a key
 * (camelCase), plus what no flag can say — named models, agents, MCP servers and permission rules.
 * What a key means is checked here; how its value compares with a flag's range is checked by the
 * flag's own schema, so the file and the command line can never disagree on what is valid.
 */

const text = z.string();
const count = z.number();
/** A comma-separated list, as the flag takes it, or an array. */
const list = z.union([z.string(), z.array(z.string())]);

/** Each key of the file that a flag also sets, and its type in the file. The flag is the key in kebab-case. */
export const SETTING_KEYS = {
  host: text,
  port: count,
  db: text,
  databaseUrl: text,
  databaseUrlFile: text,
  /** Issue 30: the history mirror's SQLite file (`--mirror-sqlite`). */
  mirrorSqlite: text,
  workspace: text,
  model: text,
  contextWindow: count,
  maxOutputTokens: count,
  maxReasoningTokens: count,
  modelRetries: count,
  stallTimeout: count,
  providerName: text,
  permissionMode: permissionModeSchema,
  token: text,
  tokenFile: text,
  jwtSecret: text,
  jwtSecretFile: text,
  jwksUrl: text,
  jwtIssuer: text,
  jwtAudience: text,
  idleTtl: count,
  corsOrigin: text,
  allowedHosts: list,
  maxSessions: count,
  maxStreams: count,
  maxSessionsPerPrincipal: count,
  maxRunningTurnsPerPrincipal: count,
  turnsPerMinutePerPrincipal: count,
  maxStreamsPerPrincipal: count,
  dailyTokensPerPrincipal: count,
  leaseTtl: count,
  ownerHost: text,
  statelyInspect: text,
  amqpUrl: text,
  routeTimeout: count,
  amqpNamespace: text,
  commandEnv: list,
  sandbox: sandboxChoiceSchema,
  resumeTurns: z.enum(['on', 'off']),
  metricsPort: count,
  metricsHost: text,
  logFormat: logFormatSchema,
  logLevel: logLevelSchema,
  /** Issue 27: `true`/`false` or `on`/`off`, as `--otel` and `--otel-content` (serve and worker). */
  otel: z.union([z.boolean(), z.enum(['on', 'off'])]),
  otelContent: z.union([z.boolean(), z.enum(['on', 'off'])]),
  /** `turnchart worker` only. */
  concurrency: count,
} as const;

export type SettingKey = keyof typeof SETTING_KEYS;

/** Keys whose value is a path: read relative to the configuration file, not to where the command runs. */
export const PATH_KEYS: readonly SettingKey[] = ['db', 'databaseUrlFile', 'mirrorSqlite', 'tokenFile', 'jwtSecretFile', 'workspace'];

/** An AI SDK language model instance, recognised by its shape (a config file may load its own copy of the AI SDK). */
export function isLanguageModel(value: unknown): value is LanguageModelV3 {
  const model = value as { specificationVersion?: unknown; doStream?: unknown } | null;
  return typeof model === 'object' && model !== null && typeof model.specificationVersion === 'string' && typeof model.doStream === 'function';
}

/** A tool made with `defineTool`, recognised by its shape. */
function isTool(value: unknown): value is AnyTool {
  const tool = value as Partial<Record<keyof AnyTool, unknown>> | null;
  return typeof tool === 'object' && tool !== null && typeof tool.name === 'string' && typeof tool.execute === 'function' && typeof tool.input === 'object';
}

const modelEntry = z.custom<string | LanguageModelV3>((value) => (typeof value === 'string' && value !== '') || isLanguageModel(value), {
  message: "expected a model spec ('openai-compatible:BASE_URL#MODEL', 'scripted:FILE', 'demo') or an AI SDK LanguageModel",
});

const toolEntry = z.custom<string | AnyTool>((value) => (typeof value === 'string' && value !== '') || isTool(value), {
  message: 'expected a workspace tool name or a tool made with defineTool',
});

/** Tool-name pattern → rule: `{ "run_command": "ask", "github__*": "allow" }`, with the runtime's bounds on hostile patterns. */
const permissionsSchema = permissionRulesSchema;

const agentFileSchema = z.strictObject({
  /** What `GET /agents` and the chat show about the agent. */
  description: z.string().min(1).max(2_000),
  /** The system prompt, or `{ file }` read relative to the configuration file. */
  instructions: z.union([z.string().min(1), z.strictObject({ file: z.string().min(1) })]),
  /** A key of `models`; the default model without it. */
  model: z.string().min(1).optional(),
  /** Workspace tool names and `defineTool` values; every workspace tool without it. */
  tools: z.array(toolEntry).optional(),
  /** Names of `mcpServers` whose tools the agent gets. */
  mcp: z.array(z.string().min(1)).optional(),
  permissions: permissionsSchema.optional(),
  guardrails: guardrailsSchema.optional(),
  /** `nested: true`: the agent may delegate even as a sub-agent (by default a sub-agent may not delegate further). */
  delegation: z
    .strictObject({ agents: z.array(z.string().min(1).max(200)).min(1).max(64), maxChildren: z.number().int().min(1).max(64).optional(), nested: z.boolean().optional() })
    .optional(),
  /** `{ network: true }`: the agent's commands may use the network under the bubblewrap sandbox (default: none). */
  sandbox: agentSandboxSchema.optional(),
  /**
   * The runtime's plain-data agent settings, with its bounds: `maxModelCalls`, `doomLoopThreshold`,
   * `runTimeoutMs`, `toolTimeoutMs`, `parallelToolCalls`, `switchTo`, `resume` (issue 26),
   * `approvalTimeoutMs` (issue 26), `retryPolicy` (issue 30).
   */
  ...agentDataSettings,
});

export const configFileSchema = z.strictObject({
  ...Object.fromEntries(Object.entries(SETTING_KEYS).map(([key, schema]) => [key, schema.optional()])),
  models: z.record(z.string().min(1).max(200), modelEntry).optional(),
  /** A key of `models`: the model of agents that name none (default: `default`, else the first). */
  defaultModel: z.string().min(1).optional(),
  agents: z.record(idSchema, agentFileSchema).optional(),
  mcpServers: mcpServersSchema.optional(),
  /** Host-wide rules, by tool-name pattern; an agent's own rules come first. */
  permissions: permissionsSchema.optional(),
  /** A skills directory (relative to the file) for every session; per-agent skills are not supported. */
  skills: z.strictObject({ dir: z.string().min(1), disabled: z.array(z.string()).optional() }).optional(),
}) as unknown as z.ZodType<ConfigFile>;

type SettingValues = { [K in SettingKey]?: z.input<(typeof SETTING_KEYS)[K]> };

/** One agent of the file. */
export type AgentFileConfig = z.input<typeof agentFileSchema>;

/** What `turnchart.config.ts` exports (`defineConfig` types it). */
export interface ConfigFile extends SettingValues {
  /** Named models: a `--model` spec or an AI SDK `LanguageModel` (TypeScript or JavaScript file only). */
  models?: Record<string, string | LanguageModelV3>;
  defaultModel?: string;
  agents?: Record<string, AgentFileConfig>;
  mcpServers?: z.input<typeof mcpServersSchema>;
  permissions?: PermissionRules;
  skills?: { dir: string; disabled?: string[] };
}
