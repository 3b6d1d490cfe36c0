import type { DoneActorEvent, EventObject } from 'xstate';
import type { PermissionMode } from '../src/protocol/commands.js';
import type { TurnOutcome } from '../src/protocol/outcome.js';
import type { SessionSnapshot } from '../src/protocol/session-snapshot.js';
import type { PermissionDecision, TurnPhase, UpdateEnvelope } from '../src/protocol/updates.js';
import { messageOf } from '../src/protocol/error-message.js';

/**
 * The chat chart's effect contract (machines/chat-client.machine.ts): the actors the command line
 * supplies — the backend's calls and the session's feed — with their inputs and outputs, the events
 * they report with, and the params of the actions it names: `show` (a notice, printed through the
 * pure renderer, src/cli/chat-render.ts), `requestCancel` and `requestTurnStatus`. The command
 * line's side is src/cli/chat-controller.ts.
 */

/** A failure as the chat reports it: the backend's code (or a client-side one) and its message. */
export interface ChatFailure {
  code: string;
  message: string;
}

/** Any rejection as a `ChatFailure` (the supplied effects reject with `{ code, message }`). */
export function failureOf(error: unknown): ChatFailure {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return { code: typeof code === 'string' ? code : 'ClientError', message: typeof message === 'string' ? message : messageOf(error) };
}

/** One stored session, as `/sessions` lists it. */
export interface SessionSummary {
  sessionId: string;
  agent: string;
  permissionMode: string;
  createdAtMs: number;
  /** `idle` or the running turn's phase. */
  status: string;
  lastOutcome: string | null;
}

/** An agent a new session may run, as `/agents` lists it (`GET /agents`). */
export interface AgentSummary {
  name: string;
  description: string | null;
  /** The description of the model its turns run on. */
  model: string;
  /** The tools its model is offered. */
  tools: string[];
}

/** The context window as the next model call would see it, in estimated tokens. */
export interface ContextUsage {
  system: number;
  conversation: number;
  tools: number;
  reservedOutput: number;
  /** Where automatic compaction starts (input plus reserved output). */
  autoCompactLine: number;
  /** The model's whole window, when the backend knows it. */
  window: number | null;
  /** Input plus reserved output as a percentage of the line. */
  percentUsed: number;
}

/** `openSession`'s input: a stored session to open, or (null) a new one with this mode and agent (null: the backend's). */
export interface OpenSessionInput {
  sessionId: string | null;
  permissionMode: PermissionMode | null;
  agent: string | null;
}

/** `openSession`'s output. */
export interface OpenedSession {
  sessionId: string;
  permissionMode: PermissionMode;
  created: boolean;
  /** The agent the session runs, when the backend says. */
  agent: string | null;
}

/** `feed`'s input: the session to follow until the actor stops. */
export interface FeedInput {
  sessionId: string;
}

/** A tool call's arguments as the model wrote them (an update carries only the call's name). */
export interface CallArguments {
  argumentsText: string;
}

/**
 * What `feed` reports, in order: a snapshot first (and again when a resume could not replay what
 * was missed), each update (a started tool call's with its arguments, looked up for a while), a
 * lost and a restored connection, and its end — no more events follow.
 */
export type FeedEvent =
  | { type: 'feed.snapshot_received'; snapshot: SessionSnapshot; resumed: boolean }
  | { type: 'feed.update_received'; envelope: UpdateEnvelope; call: CallArguments | null }
  | { type: 'feed.connection_lost'; error: ChatFailure }
  | { type: 'feed.connection_restored' }
  | { type: 'feed.ended'; error: ChatFailure };

/** `startTurn`'s input. */
export interface StartTurnInput {
  sessionId: string;
  text: string;
  clientRequestId: string;
}

/** `startTurn`'s output, once the turn's input is durable: `running`, or `queued` behind another turn. */
export interface AcceptedTurn {
  turnId: string;
  status: string;
}

/** `resolvePermission`'s input. */
export interface ResolvePermissionInput {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  decision: PermissionDecision;
}

/** `runCommand`'s input: what a slash command asks of the backend. */
export type ChatCommand =
  | { kind: 'list_sessions' }
  | { kind: 'list_agents' }
  | { kind: 'set_mode'; sessionId: string; mode: PermissionMode }
  | { kind: 'compact'; sessionId: string }
  | { kind: 'read_context'; sessionId: string };

/** `runCommand`'s output. */
export type CommandResult =
  | { kind: 'sessions_listed'; sessions: SessionSummary[] }
  | { kind: 'agents_listed'; agents: AgentSummary[] }
  | { kind: 'mode_set'; mode: PermissionMode }
  | { kind: 'compacted'; compactionId: string }
  | { kind: 'context_read'; usage: ContextUsage };

/** The params of `requestCancel` and `requestTurnStatus`. */
export interface TurnRef {
  sessionId: string;
  turnId: string;
}

/**
 * How they answer, by event: `requestCancel` only when refused (a cancel that works shows in the
 * updates), `requestTurnStatus` with the turn's outcome (null while it has none) or its failure.
 */
export type RequestReply =
  | { type: 'cancel.refused'; turnId: string; error: ChatFailure }
  | { type: 'turn_status.received'; turnId: string; outcome: TurnOutcome | null }
  | { type: 'turn_status.failed'; turnId: string; error: ChatFailure };

/** The params of `show`: what the chat tells the user. */
export type ChatNotice =
  | { kind: 'session_opened'; sessionId: string; created: boolean; mode: string; agent?: string | null }
  | { kind: 'update'; envelope: UpdateEnvelope; call: CallArguments | null; startedElsewhere: boolean }
  /** A line taken at the prompt: a terminal echoed it as it was typed, a script's line is written after its prompt. */
  | { kind: 'line_taken'; line: string; atApproval: boolean; typed: boolean }
  | { kind: 'error'; error: ChatFailure }
  | { kind: 'connection_lost'; error: ChatFailure }
  | { kind: 'connection_restored' }
  | { kind: 'feed_ended'; error: ChatFailure }
  | { kind: 'caught_up' }
  | { kind: 'turn_running'; turnId: string; phase: TurnPhase }
  | { kind: 'approval_needed'; name: string; paths: string[] }
  | { kind: 'outcome'; outcome: TurnOutcome }
  | { kind: 'cancelling' }
  | { kind: 'exit_hint' }
  | { kind: 'turn_queued'; turnId: string }
  | { kind: 'sent_while_running' }
  | { kind: 'help' }
  | { kind: 'no_session' }
  | { kind: 'bad_answer' }
  | { kind: 'usage'; usage: string }
  | { kind: 'unknown_command'; name: string }
  | { kind: 'busy' }
  | { kind: 'mode'; mode: string | null }
  | { kind: 'compacting' }
  | { kind: 'command_done'; result: CommandResult; sessionId: string | null }
  | { kind: 'input_ended_at_approval' }
  | { kind: 'leaving_turn'; turnId: string; backend: 'host' | 'embedded' };

/** The output of a done actor the chart invoked. */
export function outputOf<T>(event: EventObject): T {
  return (event as DoneActorEvent<T>).output;
}
