import type { AgentLink, SessionRow } from '../../storage/session-storage.js';
import type { ModelPort, ToolDefinition } from '../protocol/model.js';
import type { PermissionRuleSet } from '../tools/permission-rules.js';
import type { BusyPolicy, PermissionMode } from '../protocol/commands.js';
import type { AgentDefinition } from './agents.js';
import type { ResolvedHooks } from './hooks.js';
import type { SessionSandbox } from '../protocol/sandbox.js';

/**
 * The agent a session runs, with what the runtime resolved for it. agent.switch replaces them all
 * at once while no turn runs (a turn keeps the agent it started with).
 */
export interface SessionAgent {
  agentName: string;
  agent: AgentDefinition;
  /** RL-4: the runtime's hooks, then the agent's, per stage. */
  hooks: ResolvedHooks;
  /**
   * The tool surface the agent's model sees now (its registry tools, the control tools, the
   * delegation tools only when the agent may delegate): asked per request, since tool sources change.
   */
  tools: () => readonly ToolDefinition[];
  /** Issue 24: the model every model call of the session goes to: the agent's own, else the runtime's. */
  model: ModelPort;
  /** Issue 24: the runtime's permission rules with the agent's over them, compiled. */
  permissions: PermissionRuleSet;
  /**
   * What confines the agent's commands: read from its registered run_command (null without one),
   * so the model's policy and the session's snapshot say what that tool does, however the embedder built it.
   */
  sandbox: () => SessionSandbox | null;
}

/**
 * What the session was opened with: its stored row, the fence it is held under and its agent.
 * Only agent.switch (the agent) and setPermissionMode (the mode) change it, and only once stored.
 */
export interface SessionConfig extends SessionAgent {
  readonly id: string;
  /** A sub-agent's session: what started it. */
  readonly parent: AgentLink | null;
  /** Nobody can answer an approval here (every sub-agent's session): a call that would ask is a rule denial. */
  readonly nonInteractive: boolean;
  /** Issue 25: the principal that owns the session; null for one stored before principals. */
  readonly principal: string | null;
  /** Issue 25: an admin made it: its model calls draw on no principal's daily token budget. */
  readonly quotaExempt: boolean;
  permissionMode: PermissionMode;
  readonly workspaceDir: string | null;
  readonly busyPolicy: BusyPolicy;
  /** The fencing token this runtime holds for the session: every write carries it. */
  readonly fence: number;
}

export function createSessionConfig(row: SessionRow, fence: number, agent: SessionAgent): SessionConfig {
  return {
    id: row.id,
    agentName: agent.agentName,
    agent: agent.agent,
    hooks: agent.hooks,
    tools: agent.tools,
    model: agent.model,
    permissions: agent.permissions,
    sandbox: agent.sandbox,
    parent: row.parent ?? null,
    nonInteractive: row.nonInteractive === true,
    principal: row.principal ?? null,
    quotaExempt: row.quotaExempt === true,
    permissionMode: row.permissionMode,
    workspaceDir: row.workspaceDir,
    busyPolicy: row.busyPolicy ?? 'reject',
    fence,
  };
}

/** agent.switch, once stored: the next turn runs the new agent; the running one (if any) already took what it needs. */
export function installSessionAgent(config: SessionConfig, agent: SessionAgent): void {
  config.agentName = agent.agentName;
  config.agent = agent.agent;
  config.hooks = agent.hooks;
  config.tools = agent.tools;
  config.model = agent.model;
  config.permissions = agent.permissions;
  config.sandbox = agent.sandbox;
}
