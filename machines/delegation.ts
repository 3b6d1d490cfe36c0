/**
 * The control tools of delegation (issue 12, "Sub-agents"): a model whose agent allows it starts
 * child sessions, writes to them and waits for their answers. The names are the charts' to know —
 * `wait_agent` has its own state and its own loop rule (RT-14) — the work is the runtime's.
 */

import { SEND_AGENT_MESSAGE, SPAWN_AGENT, SWITCH_AGENT, WAIT_AGENT } from '../src/protocol/control-tool-names.js';

// Issue 30: agent.switch inside a run is a control tool like the delegation tools: the chart checks
// the allow-list and policy before the runtime stores the switch, so its name is the chart's to know too.
export { SEND_AGENT_MESSAGE, SPAWN_AGENT, SWITCH_AGENT, WAIT_AGENT };

export function isDelegationTool(name: string): boolean {
  return name === SPAWN_AGENT || name === SEND_AGENT_MESSAGE || name === WAIT_AGENT;
}
