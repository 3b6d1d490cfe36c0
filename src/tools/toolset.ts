import { z } from 'zod';
import type { ToolDefinition } from '../protocol/model.js';
import { planSchema } from '../protocol/plan.js';
import type { AnyTool } from './define-tool.js';
import { TurnchartError } from '../protocol/errors.js';
import { isDelegationTool } from '../../machines/delegation.js';
import { delegationDefinitions } from './delegation-tools.js';

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

/**
 * The tool surface of a session (CW-5): registry tools in the order given, then the control tools.
 * Built once; a registry tool may not take a control tool's name.
 */
export class Toolset {
  private readonly byName = new Map<string, AnyTool>();
  readonly definitions: ToolDefinition[];

  constructor(tools: AnyTool[]) {
    for (const tool of tools) {
      if (CONTROL_TOOLS.some((c) => c.name === tool.name) || isDelegationTool(tool.name)) {
        throw new TurnchartError('ToolNameConflict', `'${tool.name}' is a control tool name and cannot be registered`);
      }
      if (this.byName.has(tool.name)) throw new TurnchartError('ToolNameConflict', `two tools are named '${tool.name}'`);
      if (tool.timeoutMs !== undefined && !(Number.isSafeInteger(tool.timeoutMs) && tool.timeoutMs > 0 && tool.timeoutMs <= 2_147_483_647)) {
        throw new TurnchartError('InvalidTool', `the timeoutMs of '${tool.name}' must be a whole number of milliseconds, 1 or more`);
      }
      this.byName.set(tool.name, tool);
    }
    this.definitions = [
      ...tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: z.toJSONSchema(t.input, { io: 'input', unrepresentable: 'any' }),
      })),
      ...CONTROL_TOOLS,
    ];
  }

  /** What an agent's model sees: every tool, plus the delegation tools when the agent may delegate. */
  surfaceFor(agent: { delegation: { agents: readonly string[] } | null }): ToolDefinition[] {
    if (!agent.delegation) return this.definitions;
    let surface = this.surfaces.get(agent.delegation.agents);
    if (!surface) {
      surface = [...this.definitions, ...delegationDefinitions(agent.delegation.agents)];
      this.surfaces.set(agent.delegation.agents, surface);
    }
    return surface;
  }

  private readonly surfaces = new WeakMap<readonly string[], ToolDefinition[]>();

  registryTool(name: string): AnyTool | undefined {
    return this.byName.get(name);
  }

  isControlTool(name: string): boolean {
    return CONTROL_TOOLS.some((c) => c.name === name) || isDelegationTool(name);
  }
}
