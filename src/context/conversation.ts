import type { ChatMessage } from '../protocol/messages.js';

/** Why a compaction put a synthetic item into the conversation (CP-2). */
export type SyntheticReason = 'last_user_request_replay' | 'compaction_summary' | 'system_reminder';

/** Where a conversation item comes from (CW-3): a stored message, or a compaction's projection. */
export type Provenance =
  | { kind: 'real'; messageId: string; sequence: number }
  | { kind: 'synthetic'; compactionId: string; reason: SyntheticReason };

export interface ConversationItem {
  message: ChatMessage;
  provenance: Provenance;
}

/**
 * The last real user request: a stored `normal` user message, or a previous compaction's replay of
 * one. World state, skill bodies, agent messages, summaries and reminders never count, whatever
 * their role (CW-3).
 */
export function lastRealUserRequest(items: readonly ConversationItem[]): string | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const { message, provenance } = items[i]!;
    if (message.role !== 'user' || message.kind !== 'normal') continue;
    if (provenance.kind === 'real' || provenance.reason === 'last_user_request_replay') return message.text;
  }
  return null;
}
