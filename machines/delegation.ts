import type { ToolResult } from '../src/protocol/tool-result.js';

/**
 * The control tools of delegation (issue 12, "Sub-agents"): a model whose agent allows it starts
 * child sessions, writes to them and waits for their answers. The names are the charts' to know —
 * `wait_agent` has its own state and its own loop rule (RT-14) — the work is the runtime's.
 */

export const SPAWN_AGENT = 'spawn_agent';
export const SEND_AGENT_MESSAGE = 'send_agent_message';
export const WAIT_AGENT = 'wait_agent';

export const DELEGATION_TOOLS: readonly string[] = [SPAWN_AGENT, SEND_AGENT_MESSAGE, WAIT_AGENT];

export function isDelegationTool(name: string): boolean {
  return name === SPAWN_AGENT || name === SEND_AGENT_MESSAGE || name === WAIT_AGENT;
}

/** What `waitAgent` answers: the child's answer, or that it was still running when the wait's time ran out. */
export type WaitAgentOutput = { timedOut: false; result: ToolResult } | { timedOut: true; result: ToolResult };
