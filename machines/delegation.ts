/**
 * The control tools of delegation (issue 12, "Sub-agents"): a model whose agent allows it starts
 * child sessions, writes to them and waits for their answers. The names are the charts' to know —
 * `wait_agent` has its own state and its own loop rule (RT-14) — the work is the runtime's.
 */

export const SPAWN_AGENT = 'spawn_agent';
export const SEND_AGENT_MESSAGE = 'send_agent_message';
export const WAIT_AGENT = 'wait_agent';

export function isDelegationTool(name: string): boolean {
  return name === SPAWN_AGENT || name === SEND_AGENT_MESSAGE || name === WAIT_AGENT;
}
