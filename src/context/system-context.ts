import type { SystemPart, ToolDefinition } from '../protocol/model.js';

const PLAN_RULES =
  'Keep your plan current with update_plan when the task has several steps: send the whole plan each time, with at most one step in_progress.';
const TOOL_RULES =
  'Tool calls in one response run one at a time, in order. Each tool result says whether it succeeded; on an error, decide what to do next.';

/** Built contexts per tool surface and prompt: the same array each turn, so `prepare` validates and measures it once. */
const built = new WeakMap<readonly ToolDefinition[], Map<string, readonly SystemPart[]>>();

/**
 * The system context (CW-1): one part, `core/agent-system` — the agent prompt plus the rules of the
 * tools actually advertised. Resolved once per turn and byte-stable for a session's lifetime; the
 * same prompt and tool surface give the same (frozen) array.
 */
export function systemContext(agentPrompt: string, tools: readonly ToolDefinition[]): readonly SystemPart[] {
  let byPrompt = built.get(tools);
  if (!byPrompt) built.set(tools, (byPrompt = new Map()));
  let parts = byPrompt.get(agentPrompt);
  if (!parts) {
    const rules = [tools.length > 0 ? TOOL_RULES : '', tools.some((t) => t.name === 'update_plan') ? PLAN_RULES : ''].filter(Boolean);
    parts = Object.freeze([Object.freeze({ key: 'core/agent-system', content: [agentPrompt, ...rules].join('\n\n') })]);
    byPrompt.set(agentPrompt, parts);
  }
  return parts;
}

/** The system context of a summary request (CP-2): the agent prompt without tool-surface rules. */
export function summarySystemContext(agentPrompt: string): SystemPart[] {
  return [{ key: 'core/agent-system', content: agentPrompt }];
}
