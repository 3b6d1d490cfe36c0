import type { QueuedTurnRow, SessionRow, SessionStorage } from '../../storage/session-storage.js';
import type { ChatMessage, StoredMessage } from '../protocol/messages.js';
import type { Plan } from '../protocol/plan.js';
import type { SessionUpdate } from '../protocol/updates.js';
import type { SkillsConfig } from '../skills/types.js';
import type { ChatState } from './chat-state.js';
import type { ChartClock } from './chart-clock.js';
import type { ToolAudit } from '../protocol/audit.js';
import type { Warn } from '../protocol/log-fields.js';
import { createSessionConfig, type SessionAgent, type SessionConfig } from './session-config.js';
import { createSessionConversation, type SessionConversation } from './session-conversation.js';
import { createTurnBookkeeping, type TurnBookkeeping } from './turn-bookkeeping.js';
import { createSessionOutput, type OutputChannel, type SessionOutput } from './session-output.js';

/**
 * Everything one session's effects need, looked up by session id so machine context stays
 * plain data (serializable for inspection) and the provided machines are shared by all sessions.
 * In four parts, each with its own reason to change: what the session was opened with, what its
 * next model call is built from, where its turns stand, and what it tells the world.
 */
export interface SessionEnv {
  readonly config: SessionConfig;
  readonly conversation: SessionConversation;
  readonly turns: TurnBookkeeping;
  readonly output: SessionOutput;
}

/** What a session opens from: its stored row and what was loaded with it, its resolved agent, and where its updates go. */
interface SessionOpening {
  row: SessionRow;
  fence: number;
  agent: SessionAgent;
  chat: ChatState;
  plan: Plan | null;
  /** Its run ids, by turn (RL-1). */
  runs: Map<string, string>;
  queued: readonly QueuedTurnRow[];
  output: OutputChannel;
}

export function createSessionEnv(opening: SessionOpening): SessionEnv {
  const { row, queued } = opening;
  return {
    config: createSessionConfig(row, opening.fence, opening.agent),
    conversation: createSessionConversation(opening.chat),
    turns: createTurnBookkeeping(opening.runs, queued),
    output: createSessionOutput(row.id, opening.plan, queued, opening.output),
  };
}

export interface RuntimeServices {
  storage: SessionStorage;
  now: () => number;
  newId: (prefix: string) => string;
}

/** What every effect of every session shares. */
export interface RuntimeDeps extends RuntimeServices {
  env: (sessionId: string) => SessionEnv;
  skills: SkillsConfig | null;
  /** Where non-fatal notes go (skill scan warnings): never into the model's context. */
  warn: Warn;
  /** The charts' clock: hooks' time limits run on it (RL-4). */
  clock: ChartClock;
  /** Issue 25: input plus output tokens each principal may spend per UTC day; null for no limit (nothing is counted then). */
  dailyTokensPerPrincipal: number | null;
}

/** The single write path of RT-10/RT-12: check with chat state, write, then append. */
export async function persistAndAppend(
  env: SessionEnv,
  services: RuntimeServices,
  turnId: string,
  message: ChatMessage,
  id: string = services.newId('msg'),
  /** A tool result's audit row, written in the same transaction (RL-4). */
  audit?: ToolAudit,
): Promise<StoredMessage> {
  const { conversation, config } = env;
  conversation.chat.check(message);
  const stored: StoredMessage = {
    id,
    sessionId: config.id,
    turnId,
    sequence: conversation.chat.nextSequence,
    createdAtMs: services.now(),
    message,
  };
  await (audit ? services.storage.appendMessage(stored, config.fence, audit) : services.storage.appendMessage(stored, config.fence));
  // Read again after the write: the conversation is the one installed now.
  conversation.chat.append(stored, true);
  return stored;
}

export function emit(env: SessionEnv, turnId: string, update: SessionUpdate): void {
  env.output.updates.emit(turnId, update);
}
