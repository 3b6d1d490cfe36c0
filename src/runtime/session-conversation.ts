import type { SystemPart } from '../protocol/model.js';
import type { PreparedModelCall } from '../context/engine.js';
import type { WorldStateBaseline } from '../context/world-state/types.js';
import type { ChatState } from './chat-state.js';

interface AgentMessage {
  from: string;
  text: string;
  /** Issue 30: a runtime note (an agent switch's `system_reminder`), written as an `agent_note`, not an agent's message. */
  note?: true;
}

/**
 * What the session's next model call is built from: the conversation, what world state it was last
 * told, messages waiting to join it, and the running turn's system context. Memory only, besides the
 * conversation itself (which storage holds and a compaction, rewind or reload installs anew).
 */
export interface SessionConversation {
  /** Replaced whole when a compaction or rewind installs a new conversation. */
  chat: ChatState;
  /** What world state was last sent, per section (memory only, CW-2). */
  baseline: WorldStateBaseline;
  /** The conversation the baseline was taken against: a compaction, rewind or reload replaces it. */
  baselineChat: ChatState | null;
  /** RT-4: agent messages waiting for the next model call; memory only. */
  readonly mailbox: AgentMessage[];
  /** System context of the running turn, resolved once per turn (RT-10). */
  turnSystem: readonly SystemPart[];
  /** Sequence of the running turn's first message: the prune watermark moves up to it (CW-4). */
  turnStartSequence: number;
  /** The request prepared for the next model call, built once per call (CW-1). */
  prepared: PreparedModelCall | null;
}

/** The conversation as loaded; nothing about world state has been sent in this opening yet. */
export function createSessionConversation(chat: ChatState): SessionConversation {
  return {
    chat,
    baseline: new Map(),
    baselineChat: null,
    mailbox: [],
    turnSystem: [],
    turnStartSequence: 0,
    prepared: null,
  };
}
