import { z } from 'zod';
import type { ToolDefinition } from '../protocol/model.js';
import { planSchema } from '../protocol/plan.js';
import type { AnyTool } from './define-tool.js';
import { TurnchartError } from '../protocol/errors.js';
import { isDelegationTool, SWITCH_AGENT } from '../../machines/delegation.js';
import { delegationDefinitions, switchDefinition } from './delegation-tools.js';
import type { ToolSource } from './tool-source.js';
import { compileNamePattern } from './name-patterns.js';
import { toolRetryPolicySchema } from '../protocol/tool-retry.js';

export const UPDATE_PLAN = 'update_plan';

const CONTROL_TOOLS: ToolDefinition[] = [
  {
    name: UPDATE_PLAN,
    description:
      'Record your plan for this task as a list of steps with a status (pending, in_progress, completed). ' +
      'Send the whole plan each time; at most one step is in_progress.',
    inputSchema: z.toJSONSchema(planSchema, { io: 'input', unrepresentable: 'any' }),
  },
];

/** What the toolset needs of an agent: which registry tools it gets, whom it may delegate to, and switch to. */
export interface ToolsetAgent {
  /** Exact names or picomatch globs of the registry tools the agent gets; null: all of them. */
  tools: readonly string[] | null;
  delegation: { agents: readonly string[] } | null;
  /** Issue 30: `switch_agent` is offered only when this names targets. */
  switchTo?: readonly string[];
}

/** The registry as one version of the sources left it: tools by name, and their definitions in order. */
interface Registry {
  version: number;
  byName: Map<string, AnyTool>;
  definitions: ToolDefinition[];
}

/** An agent's surface, good while the registry keeps its version. */
interface Surface {
  version: number;
  definitions: ToolDefinition[];
}

/**
 * The tool surface of a session (CW-5): registry tools — the runtime's `tools` in the order given,
 * then each tool source's current tools — then the control tools, then (for an agent that may
 * delegate) the delegation tools. A static tool may not take a control tool's name (a throw, when
 * the runtime is made); a source's tool that clashes with a static, control or earlier source's
 * tool is left out with a warning, since a source changes while the runtime runs.
 *
 * A source's change only bumps a version: the registry and each agent's surface are rebuilt the next
 * time they are asked for, and cached until the next change, so a model step costs a lookup.
 */
export class Toolset {
  private readonly staticByName = new Map<string, AnyTool>();
  private version = 0;
  private registry: Registry | null = null;
  private readonly surfaces = new WeakMap<ToolsetAgent, Surface>();
  /** Each tool's definition, made once per tool object: a source's refresh keeps the ones it kept. */
  private readonly definitionOf = new WeakMap<AnyTool, ToolDefinition>();
  /** Each agent's tool list, compiled once. */
  private readonly selectors = new WeakMap<readonly string[], (name: string) => boolean>();
  private unsubscribes: (() => void)[] = [];

  constructor(
    tools: AnyTool[],
    private readonly sources: readonly ToolSource[] = [],
    private readonly warn: (message: string) => void = (message) => console.warn(`turnchart: ${message}`),
  ) {
    for (const tool of tools) {
      if (this.isControlTool(tool.name)) {
        throw new TurnchartError('ToolNameConflict', `'${tool.name}' is a control tool name and cannot be registered`);
      }
      if (this.staticByName.has(tool.name)) throw new TurnchartError('ToolNameConflict', `two tools are named '${tool.name}'`);
      checkTimeout(tool);
      checkRetryPolicy(tool);
      this.staticByName.set(tool.name, tool);
    }
  }

  /** Hears the sources' changes from now on; `close` stops. */
  watch(): void {
    if (this.unsubscribes.length > 0) return;
    this.unsubscribes = this.sources.map((source) =>
      source.subscribe(() => {
        this.version += 1;
      }),
    );
  }

  close(): void {
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
  }

  /** Every registry tool's definition and the control tools', as the registry stands now. */
  get definitions(): ToolDefinition[] {
    return this.current().definitions;
  }

  /** What an agent's model sees: its registry tools, the control tools, the delegation tools when it may delegate, `switch_agent` when it may switch. */
  surfaceFor(agent: ToolsetAgent): ToolDefinition[] {
    const registry = this.current();
    const cached = this.surfaces.get(agent);
    if (cached?.version === registry.version) return cached.definitions;
    const selected = agent.tools ? this.selectorOf(agent.tools) : null;
    const tools = selected ? registry.definitions.filter((d) => !registry.byName.has(d.name) || selected(d.name)) : registry.definitions;
    const delegating = agent.delegation ? [...tools, ...delegationDefinitions(agent.delegation.agents)] : tools;
    const definitions = agent.switchTo?.length ? [...delegating, switchDefinition(agent.switchTo)] : delegating;
    this.surfaces.set(agent, { version: registry.version, definitions });
    return definitions;
  }

  /** A registry tool by name, as the registry stands now, whichever agent asks. */
  registryTool(name: string): AnyTool | undefined {
    return this.current().byName.get(name);
  }

  /** The registry tool `name` names, if `agent` gets it: a tool outside its list is no tool for it. */
  toolFor(agent: ToolsetAgent, name: string): AnyTool | undefined {
    const tool = this.current().byName.get(name);
    return tool && (!agent.tools || this.selectorOf(agent.tools)(name)) ? tool : undefined;
  }

  isControlTool(name: string): boolean {
    return CONTROL_TOOLS.some((c) => c.name === name) || isDelegationTool(name) || name === SWITCH_AGENT;
  }

  private current(): Registry {
    if (this.registry?.version === this.version) return this.registry;
    const byName = new Map(this.staticByName);
    for (const source of this.sources) {
      for (const tool of this.sourceTools(source)) {
        if (this.isControlTool(tool.name) || byName.has(tool.name)) {
          this.warn(`tool source '${source.name}': a tool named '${tool.name}' exists already; this one is left out`);
          continue;
        }
        byName.set(tool.name, tool);
      }
    }
    const definitions = [...[...byName.values()].map((tool) => this.definitionFor(tool)), ...CONTROL_TOOLS];
    this.registry = { version: this.version, byName, definitions };
    return this.registry;
  }

  /** A source's tools; a source that throws, or hands back a tool with a bad time limit, loses only that much. */
  private sourceTools(source: ToolSource): readonly AnyTool[] {
    let tools: readonly AnyTool[];
    try {
      tools = source.tools();
    } catch (error) {
      this.warn(`tool source '${source.name}' could not list its tools: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
    return tools.filter((tool) => {
      try {
        checkTimeout(tool);
        checkRetryPolicy(tool);
        return true;
      } catch (error) {
        this.warn(`tool source '${source.name}': ${(error as Error).message}; the tool is left out`);
        return false;
      }
    });
  }

  private definitionFor(tool: AnyTool): ToolDefinition {
    let definition = this.definitionOf.get(tool);
    if (!definition) {
      definition = {
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputJsonSchema ?? z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }),
      };
      this.definitionOf.set(tool, definition);
    }
    return definition;
  }

  private selectorOf(patterns: readonly string[]): (name: string) => boolean {
    let selector = this.selectors.get(patterns);
    if (!selector) {
      const compiled = patterns.map(compileNamePattern);
      const exact = new Set(compiled.filter((p) => p.exact).map((p) => p.pattern));
      const globs = compiled.filter((p) => !p.exact);
      selector = (name) => exact.has(name) || globs.some((glob) => glob.matches(name));
      this.selectors.set(patterns, selector);
    }
    return selector;
  }
}

/** Issue 30: a tool's own retry policy is checked like an agent's, with zod. */
function checkRetryPolicy(tool: AnyTool): void {
  if (tool.retryPolicy === undefined) return;
  const parsed = toolRetryPolicySchema.safeParse(tool.retryPolicy);
  if (!parsed.success) throw new TurnchartError('InvalidTool', `the retryPolicy of '${tool.name}' is invalid: ${z.prettifyError(parsed.error)}`);
}

function checkTimeout(tool: AnyTool): void {
  if (tool.timeoutMs !== undefined && !(Number.isSafeInteger(tool.timeoutMs) && tool.timeoutMs > 0 && tool.timeoutMs <= 2_147_483_647)) {
    throw new TurnchartError('InvalidTool', `the timeoutMs of '${tool.name}' must be a whole number of milliseconds, 1 or more`);
  }
}
