import type { QueuedTurnView, UpdateEnvelope } from '../protocol/updates.js';
import type { RuntimeView } from '../protocol/session-snapshot.js';

/**
 * The messages of the inspector's per-session stream (`GET /inspect/api/sessions/:id/stream`) and
 * of its session list. Types only: the page imports them too.
 */

/** One actor of a session's system: the session, its turn, the turn's tool call, the effect port. */
export interface ActorInfo {
  /** The actor's id in its system (XState's `sessionId`, e.g. `x:3`). */
  actorId: string;
  parentId: string | null;
  /** Its id under its parent (`turn`, `toolCall`, `effects`), or the machine id for the root. */
  name: string;
  /** The chart it runs (`session`, `turn`, `toolCall`); null for an actor that is not a state machine. */
  machineId: string | null;
}

/** An actor as it stands: its active states as `<machine id>.<path.with.dots>` ids (ancestors included). */
export interface ActorState {
  actor: ActorInfo;
  status: string;
  states: string[];
  /** Child name → actor id. */
  children: Record<string, string>;
  /**
   * Sanitized: capped in size, secret-looking keys redacted. In a stream's snapshot items it is
   * left out when it is the same as the actor's previous snapshot's (most steps change no context).
   */
  context?: unknown;
}

/** A transition taken in a microstep: from the state that owns it to its targets. */
export interface TakenTransition {
  source: string;
  targets: string[];
  eventType: string;
}

interface Base {
  /** Position in the merged stream; also the SSE `id:`. Increases across every stream of the host. */
  cursor: number;
  /** Milliseconds since the epoch, when the host saw it. */
  at: number;
}

export type StreamItem =
  | (Base & { kind: 'actor'; actor: ActorInfo })
  /** The event itself is the `event` item just before (the same event, as the actor received it). */
  | (Base & { kind: 'snapshot'; actorId: string; eventType: string; transitions: TakenTransition[]; state: ActorState })
  | (Base & { kind: 'event'; actorId: string; sourceId: string | null; eventType: string; event: unknown })
  | (Base & { kind: 'update'; envelope: UpdateEnvelope });

/** The first message of a stream: the present, so a page that arrives late draws it at once. */
export interface StreamHello {
  sessionId: string;
  /** The cursor of the newest item when the stream was opened; items up to it are history. */
  cursor: number;
  /** The client's resume point was not in the buffer (or none was given): drop what you held. */
  reset: boolean;
  actors: ActorState[];
  session: InspectedSession;
  /** Issue 25: who owns the session; null for one stored before principals. */
  principal: string | null;
}

/** The part of the session snapshot (`GET /sessions/:id`) the page reads. */
export interface InspectedSession {
  sessionId: string;
  lastUpdateSequence: number;
  permissionMode: string;
  busyPolicy: string;
  queue: QueuedTurnView[];
  runtime: RuntimeView;
}

type SessionStatus = string;

/** A session in the inspector's list. */
export interface SessionListEntry {
  sessionId: string;
  agent: string;
  /** Issue 25: who owns the session; null for one stored before principals. */
  principal: string | null;
  permissionMode: string;
  createdAtMs: number;
  /** `idle`, or the running turn's phase. */
  status: SessionStatus;
  /** The last turn's outcome status, when known. */
  lastOutcome: string | null;
  /** Whether this host has the session open. */
  open: boolean;
}
