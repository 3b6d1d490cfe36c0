import type { ConversationItem } from '../context/conversation.js';
import { prepare } from '../context/engine.js';
import { SUMMARY_OUTPUT_LIMIT } from '../context/limits.js';
import { summarySystemContext } from '../context/system-context.js';
import type { ModelCapabilities, ModelRequest } from '../protocol/model.js';

export const SUMMARY_INSTRUCTION =
  'Summarize the conversation above for your own later use: the user\'s goal, what has been done and found, ' +
  'decisions and their reasons, open questions, and what remains to do. Be specific (names, paths, values); ' +
  'do not call tools. Your answer replaces the conversation.';

/**
 * The request that asks the model for a compaction summary (CP-2): the agent prompt without the tool
 * rules, the conversation without world-state messages (they are re-sampled anyway), every old tool
 * result pruned, no tools, output capped at the summary limit.
 */
export function summaryRequest(agentPrompt: string, items: readonly ConversationItem[], capabilities: ModelCapabilities): ModelRequest {
  const conversation = items.filter(({ message }) => !(message.role === 'user' && message.kind === 'world_state'));
  const instruction: ConversationItem = {
    message: { role: 'user', kind: 'normal', text: SUMMARY_INSTRUCTION },
    provenance: { kind: 'synthetic', compactionId: 'pending', reason: 'system_reminder' },
  };
  const { request } = prepare({
    system: summarySystemContext(agentPrompt),
    conversation: [...conversation, instruction],
    tools: [],
    capabilities: { ...capabilities, maxOutputTokens: Math.min(SUMMARY_OUTPUT_LIMIT, capabilities.maxOutputTokens) },
    watermark: Number.POSITIVE_INFINITY,
  });
  return request;
}
