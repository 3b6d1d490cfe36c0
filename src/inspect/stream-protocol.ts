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
  /** Sanitized: capped in size, secret-looking keys redacted. */
  context: unknown;
}

/**
 * An actor as one of the stream's messages left it: `version` counts that actor's `snapshot` and
 * `delta` messages in this stream, from 1. A `delta` of version n applies only to the state of
 * version n − 1; a client that holds another has missed one, and starts the stream again (the
 * hello then gives it the whole picture). 0: a state from the actor itself, not from a message (an
 * actor the stream has not sent yet): its next message is a whole `snapshot`.
 */
export interface VersionedActorState {
  version: number;
  state: ActorState;
}

/**
 * What changed in an actor since its previous message: only the parts that did. Most steps move a
 * state or two and assign a key or two of a context of twenty, so a step costs what it changed,
 * not the whole actor, to sanitize, serialize, send and parse.
 */
export interface ActorChange {
  status?: string;
  /** The active states, whole (a few ids). */
  states?: string[];
  children?: Record<string, string>;
  /** Top-level context keys with a new value (sanitized), or new keys. */
  set?: Record<string, unknown>;
  /** Top-level context keys that are gone. */
  unset?: string[];
  /**
   * The whole context, sanitized, when a key-wise change cannot say it: the context is not a plain
   * object on one side, or it is over the sanitizer's byte budget, where one key's size changes
   * what the others keep.
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
  /**
   * An actor's state after an event, whole: its first message in a stream, and after a change a
   * delta cannot say. The event itself is the `event` item just before (the same event, as the
   * actor received it).
   */
  | (Base & { kind: 'snapshot'; actorId: string; eventType: string; transitions: TakenTransition[]; version: number; state: ActorState })
  /** The same as a `snapshot`, as its difference from the actor's message of version `version − 1`. */
  | (Base & { kind: 'delta'; actorId: string; eventType: string; transitions: TakenTransition[]; version: number; change: ActorChange })
  | (Base & { kind: 'event'; actorId: string; sourceId: string | null; eventType: string; event: unknown })
  | (Base & { kind: 'update'; envelope: StreamEnvelope });

/**
 * An update envelope as the stream carries it: without the session's id (the hello's) and the
 * envelope version, the same in every update of a stream — a fifth of an update's bytes.
 */
export type StreamEnvelope = Omit<UpdateEnvelope, 'sessionId' | 'version'>;

/** The first message of a stream: the present, so a page that arrives late draws it at once. */
export interface StreamHello {
  sessionId: string;
  /** The cursor of the newest item when the stream was opened; items up to it are history. */
  cursor: number;
  /** The client's resume point was not in the buffer (or none was given): drop what you held. */
  reset: boolean;
  /** The actors as they stand, root first: each the state of its newest message (or of the actor, version 0). */
  actors: VersionedActorState[];
  /**
   * With `reset`: where the buffered items' deltas start from — for each actor whose oldest
   * buffered message is a `delta`, its state at the version before. Applying the buffer to these
   * gives each actor's state at every item, and reaches `actors`.
   */
  history: VersionedActorState[];
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
