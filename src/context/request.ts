import type { ChatMessage } from '../protocol/messages.js';
import type { ModelCapabilities, ModelRequest, SystemPart, ToolDefinition } from '../protocol/model.js';
import { normalizeConversation } from './normalize.js';

const TOOL_RULES =
  'Tool calls in one response run one at a time, in order. A tool result says whether it succeeded; ' +
  'on an error, decide what to do next. Keep your plan current with update_plan when the task has several steps.';

/** The system context of a turn (CW-1): one part, `core/agent-system`, resolved once per turn. */
export function systemContext(agentPrompt: string): SystemPart[] {
  return [{ key: 'core/agent-system', content: `${agentPrompt}\n\n${TOOL_RULES}` }];
}

/** Joins the three regions into one provider-agnostic request (CW-6). Pure: same input, same bytes. */
export function assembleRequest(
  system: SystemPart[],
  conversation: readonly ChatMessage[],
  tools: ToolDefinition[],
  capabilities: ModelCapabilities,
): ModelRequest {
  return { system, messages: normalizeConversation(conversation), tools, maxOutputTokens: capabilities.maxOutputTokens };
}
