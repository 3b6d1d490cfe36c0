import type { ModelCapabilities, RequestMessage, SystemPart, ToolDefinition } from '../protocol/model.js';
import type { ContextBudgetEstimate } from './budget.js';
import type { ConversationItem } from './conversation.js';
import { prepare } from './engine.js';
import { contextLimits } from './limits.js';
import { systemContext } from './system-context.js';

/** What `inspectContextWindow` shows (CW-9). */
export interface ContextWindowPreview {
  system: SystemPart[];
  conversation: RequestMessage[];
  /** For each conversation message: the stored message id it renders, or `synthetic`. */
  provenance: string[];
  tools: ToolDefinition[];
  budget: ContextBudgetEstimate;
  autoCompactTokenLimit: number;
  /** Estimated input plus reserved output, as a percentage of the point where compaction starts. */
  percentUsed: number;
}

/** What the preview reads of a session: its agent's system prompt, and its conversation with the prune watermark as they are now. */
export interface PreviewSources {
  systemPrompt: string;
  conversation: readonly ConversationItem[];
  watermark: number;
}

/**
 * CW-9: the next request as `prepare` builds it from the session's conversation now — no world-state
 * sampling, no provider call, nothing stored. A running turn keeps the system context it resolved.
 */
export function previewContextWindow(session: PreviewSources, tools: readonly ToolDefinition[], capabilities: ModelCapabilities): ContextWindowPreview {
  const prepared = prepare({
    system: systemContext(session.systemPrompt, tools),
    conversation: session.conversation,
    tools,
    capabilities,
    watermark: session.watermark,
  });
  const limits = contextLimits(capabilities);
  const line = Math.min(limits.autoCompactTokenLimit, limits.effectiveInputTokens);
  const used = prepared.budget.estimatedInputTokens + prepared.budget.reservedOutputTokens;
  return {
    system: prepared.request.system,
    conversation: prepared.request.messages,
    provenance: prepared.provenance,
    tools: prepared.request.tools,
    budget: prepared.budget,
    autoCompactTokenLimit: limits.autoCompactTokenLimit,
    percentUsed: line > 0 ? Math.round((1000 * used) / line) / 10 : 100,
  };
}
