import { resolveRetryPolicy, toolRetryPolicySchema, type ToolRetryPolicy } from '../protocol/tool-retry.js';
import { z } from 'zod';
import type { TurnLimits } from '../../machines/turn.machine.js';
import { systemContext } from '../context/system-context.js';
import type { ModelPort, ToolDefinition } from '../protocol/model.js';
import type { PermissionRules } from '../protocol/permission-rule.js';
import { permissionRulesSchema } from '../tools/permission-rules.js';
import { MAX_PATTERN_LENGTH, patternProblem } from '../tools/name-patterns.js';
import { hooksSchema, type Hooks } from './hooks.js';
import type { GuardrailLimits } from '../../machines/guardrails.js';
import {
  DEFAULT_RESOLVED,
  guardrailsSchema,
  onMistakeLimitSchema,
  resolveGuardrails,
  type OnMistakeLimit,
} from './guardrail-profiles.js';
import { SYSTEM_PART_TOKEN_LIMIT } from '../protocol/item-limits.js';
import { estimateTokens } from '../protocol/token-estimate.js';
import { agentSandboxSchema, DEFAULT_AGENT_SANDBOX, type AgentSandbox } from '../protocol/sandbox.js';

/** An agent's static definition (000 §1): its prompt and its limits (RT-11). */
export interface AgentDefinition {
  systemPrompt: string;
  maxModelCalls: number;
  doomLoopThreshold: number;
  /** RL-3: a run still going after this many milliseconds ends `timed_out`; null for no limit. */
  runTimeoutMs: number | null;
  /** A tool call still running after this many milliseconds fails as timed out (a tool's own `timeoutMs` wins); null for none. */
  toolTimeoutMs: number | null;
  /** RL-5: how many reads of one response may run at once; 1 keeps every call serial (the default). */
  parallelToolCalls: number;
  /** RL-4: this agent's hooks, run after the runtime's. */
  hooks?: Hooks;
  /** GR-1…GR-3: the rest of the guardrail profile (the loop's stop is `doomLoopThreshold`). */
  guardrails: GuardrailLimits;
  /** GR-2: decides what happens when the mistake breaker trips; without it the turn fails `mistake_limit`. */
  onMistakeLimit?: OnMistakeLimit;
  /**
   * Sub-agents: the agents this one may start with `spawn_agent`, and how many may run per turn; null: no delegation.
   * `nested`: whether it may still delegate when it runs as a sub-agent itself — by default it may not (issue 30, the seed's rule).
   */
  delegation: { agents: readonly string[]; maxChildren: number; nested: boolean } | null;
  /** agent.switch: the agents a session of this one may switch to. */
  switchTo: readonly string[];
  /** Issue 24: this agent's own model, for every model call of its sessions; null: the runtime's `model`. */
  model: ModelPort | null;
  /** Issue 24: the registry tools this agent gets, as exact names or globs; null: all of them. */
  tools: readonly string[] | null;
  /** Issue 24: this agent's permission rules by tool-name pattern, merged over the runtime's `permissions`; null: none of its own. */
  permissions: PermissionRules | null;
  /** Issue 25: what run_command's sandbox allows this agent's commands: `network` (default false). */
  sandbox: AgentSandbox;
  /**
   * Issue 26: a turn running when its host went away goes on when the session is next opened (true,
   * the default); false ends it `interrupted`, as before.
   */
  resume: boolean;
  /** Issue 26: an approval nobody answers within this many milliseconds is denied; null: it waits until answered. */
  approvalTimeoutMs: number | null;
  /** Issue 30: the retry policy of this agent's tools that have none of their own; null: a failed run is the result, as before. */
  retryPolicy: ToolRetryPolicy | null;
}

/** A tool-name pattern from configuration: bounded, and one the matcher can compile within its bounds. */
const toolPatternSchema = z
  .string()
  .min(1)
  .max(MAX_PATTERN_LENGTH)
  .check((ctx) => {
    const problem = patternProblem(ctx.value);
    if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
  });

/** Live children one turn may have when the agent does not say. */
const DEFAULT_MAX_CHILDREN = 4;

/**
 * An agent's settings that are plain data, as `createRuntime`'s `agents` and a configuration file's
 * `agents` both take them (one set of bounds for both).
 */
export const agentDataSettings = {
  maxModelCalls: z.number().int().min(1).max(1_000).optional(),
  doomLoopThreshold: z.number().int().min(2).max(100).optional(),
  runTimeoutMs: z.number().int().min(1).max(2_147_483_647).optional(),
  toolTimeoutMs: z.number().int().min(1).max(2_147_483_647).optional(),
  /** `true` runs up to 4 calls of one response at once; a number sets the bound. */
  parallelToolCalls: z.union([z.boolean(), z.number().int().min(1).max(64)]).optional(),
  /** agent.switch: the agents a session of this agent may switch to. */
  switchTo: z.array(z.string().min(1).max(200)).max(64).optional(),
  /** Issue 26: `false` ends a turn whose host went away `interrupted` instead of going on with it. */
  resume: z.boolean().optional(),
  /** Issue 26: an approval unanswered this long is denied (the wait survives restarts: it counts from the first request). */
  approvalTimeoutMs: z.number().int().min(1).max(2_147_483_647).optional(),
  /** Issue 30: `{ maxAttempts, backoffMs, on: ['timeout', 'transient'], continueLoop? }` for tools without their own. */
  retryPolicy: toolRetryPolicySchema.optional(),
};

const agentConfigSchema = z.object({
  systemPrompt: z.string().min(1).optional(),
  ...agentDataSettings,
  /** RL-4: checked to be functions; the functions given are kept, not zod's wrappers. */
  hooks: hooksSchema.optional(),
  /** `'default'`, `'cline'`, or `{ profile?, loop?, cycles?, nearDuplicates?, mistakeLimit?, stallTimeoutMs?, maxTurnTokens? }`. */
  guardrails: guardrailsSchema.optional(),
  onMistakeLimit: onMistakeLimitSchema.optional(),
  /** Sub-agents: `spawn_agent` may start these agents, at most `maxChildren` live per turn (default 4). */
  /** `nested: true` lets it delegate even in a sub-agent's session; by default a sub-agent may not delegate further. */
  delegation: z
    .strictObject({ agents: z.array(z.string().min(1).max(200)).min(1).max(64), maxChildren: z.number().int().min(1).max(64).optional(), nested: z.boolean().optional() })
    .optional(),
  /** Issue 24: the agent's own model; checked as the runtime's `model` is. */
  model: z.custom<ModelPort>((v) => typeof (v as ModelPort | null)?.stream === 'function', 'a ModelPort').optional(),
  /** Issue 24: the registry tools (the runtime's `tools` and tool sources) this agent gets: exact names or globs. */
  tools: z.array(toolPatternSchema).max(200).optional(),
  /** Issue 24: `{ "run_command": "ask", "github__*": "allow", "*__delete*": "deny" }`, over the runtime's `permissions`. */
  permissions: permissionRulesSchema.optional(),
  /** Issue 25: `{ network: true }` lets the agent's commands use the network under the bubblewrap sandbox. */
  sandbox: agentSandboxSchema.optional(),
});

/** Reads of one response run at once when parallel tool calls are on and no bound is given. */
const DEFAULT_PARALLEL_READS = 4;

export type AgentConfig = Omit<z.infer<typeof agentConfigSchema>, 'hooks' | 'model'> & { hooks?: Hooks; model?: ModelPort };

const DEFAULT_PROMPT =
  'You are a helpful agent. Use the tools you are given when they help, and answer plainly when you are done.';

/** RT-11: the default agent allows 20 model calls, the explorer 15; both stop a loop at 3 repeats. */
export const DEFAULT_AGENTS: Record<string, AgentDefinition> = {
  default: {
    systemPrompt: DEFAULT_PROMPT,
    maxModelCalls: 20,
    doomLoopThreshold: 3,
    runTimeoutMs: null,
    toolTimeoutMs: null,
    parallelToolCalls: 1,
    guardrails: DEFAULT_RESOLVED.limits,
    delegation: null,
    switchTo: [],
    model: null,
    tools: null,
    permissions: null,
    sandbox: DEFAULT_AGENT_SANDBOX,
    resume: true,
    approvalTimeoutMs: null,
    retryPolicy: null,
  },
  explorer: {
    systemPrompt: 'You explore and report. Prefer reading over changing anything.',
    maxModelCalls: 15,
    doomLoopThreshold: 3,
    runTimeoutMs: null,
    toolTimeoutMs: null,
    parallelToolCalls: 1,
    guardrails: DEFAULT_RESOLVED.limits,
    delegation: null,
    switchTo: [],
    model: null,
    tools: null,
    permissions: null,
    sandbox: DEFAULT_AGENT_SANDBOX,
    resume: true,
    approvalTimeoutMs: null,
    retryPolicy: null,
  },
};

export function resolveAgents(config: Record<string, AgentConfig> | undefined): Record<string, AgentDefinition> {
  // A null-prototype record, so no inherited name can ever resolve to an agent.
  const agents: Record<string, AgentDefinition> = Object.assign(Object.create(null) as Record<string, AgentDefinition>, DEFAULT_AGENTS);
  for (const [name, given] of Object.entries(config ?? {})) {
    const parsed = agentConfigSchema.parse(given);
    // CW-8: an author-controlled system part over its limit is refused, never trimmed.
    if (parsed.systemPrompt && estimateTokens(parsed.systemPrompt) >= SYSTEM_PART_TOKEN_LIMIT) {
      throw new Error(`the system prompt of agent '${name}' estimates ${estimateTokens(parsed.systemPrompt)} tokens (limit ${SYSTEM_PART_TOKEN_LIMIT})`);
    }
    const base = agentNamed(agents, name) ?? DEFAULT_AGENTS.default!;
    const guardrails = resolveGuardrails(name, parsed.guardrails, parsed.doomLoopThreshold, { loopStop: base.doomLoopThreshold, limits: base.guardrails });
    const onMistakeLimit = parsed.onMistakeLimit ?? base.onMistakeLimit;
    agents[name] = {
      systemPrompt: parsed.systemPrompt ?? base.systemPrompt,
      maxModelCalls: parsed.maxModelCalls ?? base.maxModelCalls,
      doomLoopThreshold: guardrails.loopStop,
      runTimeoutMs: parsed.runTimeoutMs ?? base.runTimeoutMs,
      toolTimeoutMs: parsed.toolTimeoutMs ?? base.toolTimeoutMs,
      parallelToolCalls: parallelBound(parsed.parallelToolCalls) ?? base.parallelToolCalls,
      ...(given.hooks ? { hooks: given.hooks } : base.hooks && { hooks: base.hooks }),
      guardrails: guardrails.limits,
      ...(onMistakeLimit && { onMistakeLimit }),
      delegation: parsed.delegation
        ? { agents: parsed.delegation.agents, maxChildren: parsed.delegation.maxChildren ?? DEFAULT_MAX_CHILDREN, nested: parsed.delegation.nested ?? false }
        : base.delegation,
      switchTo: parsed.switchTo ?? base.switchTo,
      // The model object given is kept, not zod's copy of it.
      model: given.model ?? base.model,
      tools: parsed.tools ?? base.tools,
      permissions: parsed.permissions ?? base.permissions,
      sandbox: parsed.sandbox ? { network: parsed.sandbox.network ?? base.sandbox.network } : base.sandbox,
      resume: parsed.resume ?? base.resume,
      approvalTimeoutMs: parsed.approvalTimeoutMs ?? base.approvalTimeoutMs,
      retryPolicy: parsed.retryPolicy ? resolveRetryPolicy(parsed.retryPolicy) : base.retryPolicy,
    };
  }
  checkAgentNames(agents);
  return agents;
}

/** Every agent named for delegation or a switch must exist: a typo is refused when the runtime is made, not when the model calls. */
function checkAgentNames(agents: Record<string, AgentDefinition>): void {
  for (const [name, agent] of Object.entries(agents)) {
    for (const other of [...(agent.delegation?.agents ?? []), ...agent.switchTo]) {
      if (!agentNamed(agents, other)) throw new Error(`agent '${name}' names an unknown agent '${other}'`);
    }
  }
}

/**
 * CW-8 at configuration time: each agent's system context — its prompt plus the rules of the tools
 * this runtime advertises — must fit its limit, or the runtime is refused now rather than every
 * turn failing at its first model call.
 */
export function checkSystemContexts(agents: Record<string, AgentDefinition>, toolsOf: (agent: AgentDefinition) => readonly ToolDefinition[]): void {
  for (const [name, agent] of Object.entries(agents)) {
    for (const part of systemContext(agent.systemPrompt, toolsOf(agent))) {
      const tokens = estimateTokens(part.content);
      if (tokens >= SYSTEM_PART_TOKEN_LIMIT) {
        throw new Error(`the system context of agent '${name}' (its prompt and the tool rules) estimates ${tokens} tokens (limit ${SYSTEM_PART_TOKEN_LIMIT})`);
      }
    }
  }
}

export function limitsOf(agent: AgentDefinition): TurnLimits {
  return { maxModelCalls: agent.maxModelCalls, doomLoopThreshold: agent.doomLoopThreshold, runTimeoutMs: agent.runTimeoutMs, guardrails: agent.guardrails };
}

function parallelBound(setting: boolean | number | undefined): number | undefined {
  if (setting === undefined) return undefined;
  if (typeof setting === 'number') return setting;
  return setting ? DEFAULT_PARALLEL_READS : 1;
}

/** An agent by name, through own properties only: `__proto__` or `toString` is no agent. */
export function agentNamed(agents: Record<string, AgentDefinition>, name: string): AgentDefinition | undefined {
  return Object.hasOwn(agents, name) ? agents[name] : undefined;
}
