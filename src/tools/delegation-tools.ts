import { z } from 'zod';
import { SEND_AGENT_MESSAGE, SPAWN_AGENT, SWITCH_AGENT, WAIT_AGENT } from '../../machines/delegation.js';
import type { ToolDefinition } from '../protocol/model.js';

/** The arguments of the delegation control tools, checked like any tool's. */
const spawnAgentSchema = z.strictObject({
  agent: z.string().min(1).max(200),
  task: z.string().min(1).max(200_000),
});

const sendAgentMessageSchema = z.strictObject({
  agentId: z.string().min(1).max(200),
  text: z.string().min(1).max(200_000),
});

/** The longest a single wait may take: an hour. */
const MAX_WAIT_MS = 3_600_000;

const waitAgentSchema = z.strictObject({
  agentId: z.string().min(1).max(200),
  timeoutMs: z.number().int().min(1).max(MAX_WAIT_MS),
});

/** Issue 30: agent.switch inside a run; `reason` is for the audit log and the reminder the next model call reads. */
const switchAgentSchema = z.strictObject({
  agent: z.string().min(1).max(200),
  reason: z.string().min(1).max(2_000).optional(),
});

export const DELEGATION_SCHEMAS: Readonly<Record<string, z.ZodType<Record<string, unknown>>>> = {
  [SPAWN_AGENT]: spawnAgentSchema,
  [SEND_AGENT_MESSAGE]: sendAgentMessageSchema,
  [WAIT_AGENT]: waitAgentSchema,
  [SWITCH_AGENT]: switchAgentSchema,
};

const schemaOf = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });

/** Advertised only to agents that may delegate; the names they may start are in the description. */
export function delegationDefinitions(agents: readonly string[]): ToolDefinition[] {
  return [
    {
      name: SPAWN_AGENT,
      description:
        `Start a sub-agent on a task; it works on its own and answers once. Returns its agentId at once. ` +
        `Agents you may start: ${agents.join(', ')}. It cannot ask the user for approvals.`,
      inputSchema: schemaOf(spawnAgentSchema),
    },
    {
      name: SEND_AGENT_MESSAGE,
      description: 'Send a sub-agent a message: it reads it before its next model call, or starts working on it when it is idle.',
      inputSchema: schemaOf(sendAgentMessageSchema),
    },
    {
      name: WAIT_AGENT,
      description: `Wait up to timeoutMs (at most ${MAX_WAIT_MS}) for a sub-agent's answer. Its answer also arrives as an agent message.`,
      inputSchema: schemaOf(waitAgentSchema),
    },
  ];
}

/** Issue 30: advertised only to agents whose `switchTo` names targets; the targets are in the description. */
export function switchDefinition(targets: readonly string[]): ToolDefinition {
  return {
    name: SWITCH_AGENT,
    description:
      `Hand this run over to another agent: your next step continues as that agent, with its instructions and tools. ` +
      `Agents you may switch to: ${targets.join(', ')}.`,
    inputSchema: schemaOf(switchAgentSchema),
  };
}
