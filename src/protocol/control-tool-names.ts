/**
 * The names of the control tools the charts know by name (machines/delegation.ts): delegation
 * (issue 12) and the in-run agent switch (issue 30). Vocabulary, so the run-event table
 * (run-events.ts) names them without reaching into the charts.
 */
export const SPAWN_AGENT = 'spawn_agent';
export const SEND_AGENT_MESSAGE = 'send_agent_message';
export const WAIT_AGENT = 'wait_agent';
export const SWITCH_AGENT = 'switch_agent';
