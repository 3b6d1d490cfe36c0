import type { UpdateEnvelope } from '../protocol/updates.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { PermissionMode } from '../protocol/commands.js';
import type { CommandInput, CommandOk } from '../protocol/command-catalog.js';
import type { SessionSnapshot } from '../protocol/session-snapshot.js';
import type { AgentSummary, ContextUsage, SessionSummary } from '../../machines/chat-client.effects.js';
import { messageOf } from '../protocol/error-message.js';

/** The session commands the chat sends. */
export type ChatCommandName = 'submitTurn' | 'cancelTurn' | 'resolvePermission' | 'setPermissionMode' | 'compactConversation';

/**
 * The chat's commands as the catalog has them (`src/protocol/command-catalog.ts`): a session and
 * the command's input in, its success out; a refusal is thrown as a `ChatError` with its code.
 */
type ChatCommands = { [K in ChatCommandName]: (sessionId: string, input: CommandInput<K>) => Promise<CommandOk<K>> };

/**
 * What the terminal chat needs from a turnchart: one interface, two backends — a host over HTTP and
 * Server-Sent Events (`chat-http.ts`) or a runtime in this process on a local database
 * (`chat-embedded.ts`). The UI never knows which one it talks to.
 */
export interface ChatClient extends ChatCommands {
  /** A host keeps running a turn after the chat leaves; an embedded runtime stops with the chat. */
  readonly kind: 'host' | 'embedded';
  /** Where the sessions live, for the banner: the host's URL or the database file. */
  readonly description: string;
  createSession(options: { permissionMode?: PermissionMode; agent?: string }): Promise<SessionInfo>;
  /** A stored session (reopened when it was closed). */
  openSession(sessionId: string): Promise<SessionInfo>;
  /** Newest first. */
  listSessions(limit: number): Promise<SessionSummary[]>;
  /** The agents a new session may run (`GET /agents`). */
  listAgents(): Promise<AgentSummary[]>;
  turnStatus(sessionId: string, turnId: string): Promise<{ status: string; outcome?: TurnOutcome }>;
  context(sessionId: string): Promise<ContextUsage>;
  /** The call as the model made it (its stored assistant message), or null when it cannot be found. */
  toolCall(sessionId: string, toolCallId: string): Promise<{ name: string; argumentsText: string } | null>;
  /**
   * The session's live updates. The first event is a snapshot (`ready` resolves then); after a lost
   * connection the feed resumes where it stopped, or sends a snapshot when that is no longer possible.
   */
  follow(sessionId: string, listener: (event: FeedEvent) => void): Feed;
  close(): Promise<void>;
}

export interface SessionInfo {
  sessionId: string;
  snapshot: SessionSnapshot;
  /** The agent the session runs, when the backend says. */
  agent?: string;
}

/** A stored session as `/sessions` lists it, and the context window as `/context` draws it: the chat chart's vocabulary. */
export type { AgentSummary, ContextUsage, SessionSummary } from '../../machines/chat-client.effects.js';

export type FeedEvent =
  | { kind: 'update'; envelope: UpdateEnvelope }
  /** `resumed: false` on the first connection; true when a resume could not replay what was missed. */
  | { kind: 'snapshot'; snapshot: SessionSnapshot; resumed: boolean }
  | { kind: 'connection_lost'; error: ChatError }
  | { kind: 'connection_restored' }
  /** The feed stopped for good (the host refused it); no more events follow. */
  | { kind: 'ended'; error: ChatError };

export interface Feed {
  /** Resolves once the first snapshot arrived; rejects when the first connection is refused. */
  ready: Promise<void>;
  close(): void;
}

/** Anything a backend refuses or fails with: the host's error code (or a client-side one) and its message. */
export class ChatError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ChatError';
  }
}

/** Any thrown value as a `ChatError`, keeping a typed code when there is one. */
export function asChatError(error: unknown, fallbackCode = 'ClientError'): ChatError {
  if (error instanceof ChatError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = messageOf(error);
  return new ChatError(typeof code === 'string' && /^[A-Z][A-Za-z]+$/.test(code) ? code : fallbackCode, message);
}
