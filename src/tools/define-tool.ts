import type { ToolRetryPolicyConfig } from '../protocol/tool-retry.js';
import type { z } from 'zod';
import type { AuthorizationDecision } from '../protocol/tool-result.js';
import type { PermissionMode } from '../protocol/commands.js';
import type { AgentSandbox, CommandSandbox } from '../protocol/sandbox.js';

export type ToolEffect = 'read' | 'write' | 'execute';

export interface AuthorizeContext {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  permissionMode: PermissionMode;
  /** The session's own workspace (`createSession({ workspaceDir })`); the workspace tools work there when it lies inside their root. */
  workspaceDir?: string;
}

export interface ExecuteContext {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  /** Aborted when the turn is cancelled or the session stops: a tool must stop its work. */
  signal: AbortSignal;
  /** Streams progress to the UI as `tool_call_progress` (never stored). */
  progress: (progress: unknown) => void;
  /** Paths the user approved for this call only (RT-16). */
  approvedPaths: string[];
  /** The session's agent's sandbox settings (whether its commands may use the network); absent: the defaults, no network. */
  agentSandbox?: AgentSandbox;
  /** As `AuthorizeContext.workspaceDir`. */
  workspaceDir?: string;
}

export interface ToolExecutionResult {
  status: 'succeeded' | 'failed' | 'cancelled';
  content: string;
  /** Issue 30: a failure that may pass (a busy server, a dropped connection): a retry policy with `on: ['transient']` runs the tool again. */
  transient?: boolean;
}

export interface Tool<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  effect: ToolEffect;
  input: Schema;
  authorize?: (args: z.output<Schema>, ctx: AuthorizeContext) => AuthorizationDecision | Promise<AuthorizationDecision>;
  /** A time limit (ms): past it the tool's signal is aborted and the call fails saying it timed out. Overrides the agent's `toolTimeoutMs`. */
  timeoutMs?: number;
  /** The paths an approval asked because of the session's mode names (the user sees them; `approvedPaths` gets them). */
  approvalPaths?: (args: z.output<Schema>) => string[];
  /**
   * The input's JSON Schema as the model sees it, when the tool has one of its own (an MCP server's
   * tool): the tool's definition then carries it instead of `z.toJSONSchema(input)`, and `input`
   * is the check (for MCP tools, an ajv validator wrapped in `z.custom`).
   */
  inputJsonSchema?: Record<string, unknown>;
  /**
   * Calling it twice with the same arguments has the effect of calling it once (an MCP tool's
   * `idempotentHint`). A turn resumed after its host went away (issue 26) runs such a call again
   * instead of giving it the `interrupted` result.
   */
  idempotent?: boolean;
  /**
   * Issue 30: what a timed-out or transiently failed run of this tool does — run again, at most
   * `maxAttempts` runs, only for a tool declared `idempotent` (or a read) — over its agent's
   * `retryPolicy`. Checked when the runtime is made (a source's tool with a bad one is left out).
   */
  retryPolicy?: ToolRetryPolicyConfig;
  /** The MCP server whose tool this is (traces call it an `extension`, issue 27). */
  mcpServer?: string;
  /**
   * The sandbox the tool's work runs in, for a tool that runs it outside the host process
   * (run_command's commands): the world state's sandbox policy tells the model of it.
   */
  sandbox?: CommandSandbox;
  execute: (args: z.output<Schema>, ctx: ExecuteContext) => Promise<ToolExecutionResult> | ToolExecutionResult;
}

/** Identity with inference: `args` in `authorize` and `execute` get the schema's type. */
export function defineTool<Schema extends z.ZodType>(tool: Tool<Schema>): Tool<Schema> {
  return tool;
}

export type AnyTool = Tool<z.ZodType>;
