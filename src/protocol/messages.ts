/** The conversation vocabulary shared by chat state, storage and the model request. */

import type { TurnTermination } from './outcome.js';
import type { AssistantProviderData, ProviderMetadata } from './provider-data.js';

/** `guardrail_note`: guidance the host's `onMistakeLimit` gave (GR-2), written before the next model call; `agent_note`: the session's agent was switched (agent.switch). */
export type MessageKind = 'normal' | 'skill_instruction' | 'agent_message' | 'world_state' | 'guardrail_note' | 'agent_note';

/** A tool call as the provider completed it; `argumentsText` is the raw JSON the model produced. */
export interface ToolCallPart {
  /** The runtime's id (RT-15): unique in the session; results, updates and approvals use it. */
  id: string;
  name: string;
  argumentsText: string;
  /** The provider's own id, when the runtime gave the call another one: the provider request uses it. */
  providerId?: string;
  /** Opaque data the provider attached to the call (e.g. a thought signature), sent back as received (RT-18). */
  providerMetadata?: ProviderMetadata;
}

/** How a tool call ended, as stored (RT-17). */
export type ToolResultStatus = 'succeeded' | 'failed' | 'denied' | 'cancelled' | 'outcome_unknown';

/** What the model is told about a tool result (RT-17's mapping). */
export type ModelVisibleStatus = 'success' | 'error' | 'denied' | 'interrupted';

/** The four world-state sections (CW-2), in the fixed order they are sampled and sent. */
export type WorldStateSection = 'runtime/user-project-context' | 'project/AGENTS.md' | 'skills/catalog' | 'runtime/sandbox-policy';

export interface UserMessage {
  role: 'user';
  kind: MessageKind;
  text: string;
  /** Sender of an agent message delivered through the mailbox. */
  from?: string;
  /** For `world_state` messages: which section this message renders. */
  section?: WorldStateSection;
  /** For `skill_instruction` messages: the skill whose body this snapshots. */
  skill?: { name: string; path: string };
}

export interface AssistantMessage {
  role: 'assistant';
  text: string;
  reasoning: string;
  toolCalls: ToolCallPart[];
  /** Provider-opaque data of the response (RT-18): sent back on every later request, so it counts in the budget. */
  providerData?: AssistantProviderData;
}

/** Binary content a tool returned (an image, a file); dropped for models that cannot take it. */
export interface DataBlock {
  mediaType: string;
  base64: string;
}

export interface ToolResultMessage {
  role: 'tool';
  toolCallId: string;
  toolName: string;
  status: ToolResultStatus;
  content: string;
  data?: DataBlock[];
  /** For the UI only: never sent to the model, never counted in the budget (CW-7). */
  artifact?: unknown;
  /**
   * Issue 26: this result ended its turn (a denial, a loop stop). Stored with it, so a host that
   * resumes a turn whose end was never written ends it the same way instead of calling the model.
   */
  endedTurn?: TurnTermination;
}

export type ChatMessage = UserMessage | AssistantMessage | ToolResultMessage;

/** A message with its durable identity. `sequence` orders a session's history. */
export interface StoredMessage {
  id: string;
  sessionId: string;
  turnId: string;
  sequence: number;
  createdAtMs: number;
  message: ChatMessage;
}

export function modelVisibleStatus(status: ToolResultStatus): ModelVisibleStatus {
  switch (status) {
    case 'succeeded':
      return 'success';
    case 'failed':
    case 'outcome_unknown':
      return 'error';
    case 'denied':
      return 'denied';
    case 'cancelled':
      return 'interrupted';
  }
}

/** RT-25: the exact text of a result synthesized for a call that never got one. */
export const INTERRUPTED_RESULT_TEXT =
  'Tool result unavailable: the previous turn ended before a durable result was recorded.';

/** RT-13: the text given to calls skipped because an earlier call ended the turn. */
export const NOT_EXECUTED_RESULT_TEXT = 'tool was not executed because the turn already terminated';
