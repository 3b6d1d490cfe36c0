import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import type { SessionStorage } from '../../storage/session-storage.js';
import { TurnchartError } from '../protocol/errors.js';
import type { ModelPort } from '../protocol/model.js';
import type { AnyTool } from '../tools/define-tool.js';
import { Toolset } from '../tools/toolset.js';
import type { SkillsConfig } from '../skills/types.js';
import type { ToolSource } from '../tools/tool-source.js';
import type { PermissionRules } from '../protocol/permission-rule.js';
import { permissionRulesSchema } from '../tools/permission-rules.js';
import { messageOf } from '../protocol/error-message.js';
import type { Warn } from '../protocol/log-fields.js';
import { checkSystemContexts, resolveAgents, type AgentConfig, type AgentDefinition } from './agents.js';
import type { ChartClock } from './chart-clock.js';
import { hooksSchema, type Hooks } from './hooks.js';

export interface RuntimeOptions {
  storage: SessionStorage;
  model: ModelPort;
  tools?: AnyTool[];
  agents?: Record<string, AgentConfig>;
  /** XState inspection observer for every actor of every session (e.g. `@statelyai/inspect`). */
  inspect?: (event: InspectionEvent) => void;
  /** Clock for stored and streamed timestamps; tests may fix it. */
  now?: () => number;
  /** The clock the charts' timers run on (a run's time limit), and the idle timers; XState's `SimulatedClock` in tests. */
  clock?: ChartClock;
  /** Capacity of the trace queue before signals are dropped (RT-26); default 1 024, or 64 per open session when that is more. A number set here stays fixed. */
  traceQueueCapacity?: number;
  /** A skills directory: its catalog is world state, its skills can be picked as turn input (RT-1, CW-2). */
  skills?: SkillsConfig;
  /**
   * Where non-fatal notes go (e.g. a skill folder without SKILL.md, a subscriber that threw); default
   * `console.warn`. A second argument names the session, turn or task the note is about (issue 27);
   * a one-argument function still works, the text names them too.
   */
  warn?: Warn;
  /**
   * Close a session after this long (ms) with no turn running or queued and no update subscriber;
   * it reopens from storage on its next use. Default: sessions stay open until closed.
   */
  idleTtlMs?: number;
  /**
   * Issue 26: sessions created here go on with a turn their host left running (a crash, a restart, a
   * lease taken from a dead owner, an eviction while it waited for an approval) when next opened,
   * unless their agent says `resume: false`; a shutdown and an idle eviction then park a running turn
   * instead of ending it. Default true; a task worker turns it off (it resumes its tasks its own way).
   */
  resumeTurns?: boolean;
  /** Ownership of sessions across runtimes on one database: lease length and identity. */
  ownership?: { leaseTtlMs?: number; ownerId?: string; host?: string };
  /** Update sequences reserved in storage at a time (see `SequenceReservation`); for tests. */
  sequenceBlock?: number;
  /** RL-4: hooks around context build and tool dispatch for every session; an agent's own `hooks` run after these. */
  hooks?: Hooks;
  /**
   * Issue 24: tools whose list changes while the runtime runs (an MCP server's), after `tools`. A
   * source's tool whose name another tool has is left out with a `warn`.
   */
  toolSources?: readonly ToolSource[];
  /** Issue 24: permission rules by tool-name pattern for every agent; an agent's own `permissions` win for the same pattern. */
  permissions?: PermissionRules;
  /**
   * Issue 25: input plus output tokens the sessions of one principal may spend per UTC day (by
   * `now`), counted in storage as model calls finish. Once spent, a new turn of that principal's
   * sessions ends `budget_exhausted` before any model call; a running turn goes on. Sessions created
   * with `quotaExempt` (an admin's) and sessions without a principal draw on none. Default: no limit,
   * and nothing counted.
   */
  dailyTokensPerPrincipal?: number;
}

const optionsSchema = z.object({
  storage: z.custom<SessionStorage>((v) => typeof (v as SessionStorage | null)?.beginTurn === 'function', 'a SessionStorage'),
  model: z.custom<ModelPort>((v) => typeof (v as ModelPort | null)?.stream === 'function', 'a ModelPort'),
  tools: z.array(z.custom<AnyTool>((v) => typeof (v as AnyTool | null)?.execute === 'function', 'a tool from defineTool')).optional(),
  agents: z.record(z.string(), z.unknown()).optional(),
  inspect: z.function().optional(),
  now: z.function().optional(),
  clock: z.custom<ChartClock>((v) => typeof (v as ChartClock | null)?.setTimeout === 'function', 'an XState Clock').optional(),
  traceQueueCapacity: z.number().int().min(1).optional(),
  skills: z.object({ dir: z.string().min(1), disabled: z.array(z.string()).optional() }).optional(),
  warn: z.function().optional(),
  idleTtlMs: z.number().int().min(0).max(2_147_483_647).optional(),
  resumeTurns: z.boolean().optional(),
  ownership: z
    .object({
      leaseTtlMs: z.number().int().min(100).max(86_400_000).optional(),
      ownerId: z.string().min(1).max(200).optional(),
      host: z.string().min(1).max(255).optional(),
    })
    .optional(),
  sequenceBlock: z.number().int().min(2).max(1_000_000_000).optional(),
  hooks: hooksSchema.optional(),
  toolSources: z
    .array(
      z.custom<ToolSource>(
        (v) => typeof (v as ToolSource | null)?.tools === 'function' && typeof (v as ToolSource | null)?.subscribe === 'function',
        'a ToolSource (tools() and subscribe())',
      ),
    )
    .max(64)
    .optional(),
  permissions: permissionRulesSchema.optional(),
  dailyTokensPerPrincipal: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
});

/**
 * Checks the options before anything touches storage: a bad option, agent or system context is
 * `InvalidOptions`. Answers the tool set and the agents resolved against it.
 */
export function checkRuntimeOptions(options: RuntimeOptions): { toolset: Toolset; agents: Record<string, AgentDefinition> } {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw new TurnchartError('InvalidOptions', z.prettifyError(parsed.error));
  const warn = options.warn ?? ((message: string) => console.warn(`turnchart: ${message}`));
  const toolset = new Toolset(options.tools ?? [], options.toolSources ?? [], warn);
  try {
    const agents = resolveAgents(options.agents);
    checkSystemContexts(agents, (agent) => toolset.surfaceFor(agent));
    return { toolset, agents };
  } catch (error) {
    throw new TurnchartError('InvalidOptions', error instanceof z.ZodError ? z.prettifyError(error) : messageOf(error));
  }
}
