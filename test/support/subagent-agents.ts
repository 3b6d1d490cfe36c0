import type { AgentConfig } from '../../src/index.js';

/** The agents of the sub-agent crash test: its host process and the runtime that restarts after it. */
export const LEAD_PROMPT = 'You lead and delegate.';
export const WORKER_PROMPT = 'You work on what you are given.';

export const CRASH_AGENTS: Record<string, AgentConfig> = {
  lead: { systemPrompt: LEAD_PROMPT, delegation: { agents: ['worker'] } },
  worker: { systemPrompt: WORKER_PROMPT },
};
