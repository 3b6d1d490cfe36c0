import type { ContextWindowPreview } from '../context/preview.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import type { CommandInput, CommandResult, RoutedCommandName } from '../protocol/command-catalog.js';
import type { TurnStatusResult } from '../protocol/command-results.js';
import type { SessionSnapshot } from '../protocol/session-snapshot.js';

/**
 * Where an event stream starts: a snapshot (a new client), the updates a resuming client missed, or
 * — its range gone — a snapshot and the updates that follow it. Those (`updates`, after the
 * snapshot's `lastUpdateSequence`, without a gap) are the continuation of a session that changed
 * hands: the snapshot shows the session as its owner opened it, and the client still gets every
 * update since (issue 26). Absent, as from a host before issue 26, is none.
 */
export type FeedStart =
  | { kind: 'snapshot'; snapshot: SessionSnapshot }
  | { kind: 'snapshot_required'; snapshot: SessionSnapshot; updates?: UpdateEnvelope[] }
  | { kind: 'replay'; after: number; updates: UpdateEnvelope[] };

export interface FeedSink {
  update(envelope: UpdateEnvelope): void;
  /** The stream is over (the session closed here, moved, or its owner went away): the client resumes with its last id. */
  end(): void;
}

/** A session's updates for one event stream: where it starts, then live updates after that start. */
export interface UpdateFeed {
  start: FeedStart;
  /** Delivers the live updates (those that came while nobody listened first); the function stops them. */
  subscribe(sink: FeedSink): () => void;
}

/**
 * The command surface the HTTP routes use. A session open in this host is a local handle; in a
 * cluster, one held by another host is a proxy that routes each command to it and answers the same.
 * Commands answer the handle's result values; storage failures and typed errors are thrown.
 */
export interface SessionAccess {
  readonly id: string;
  /** Any command of the catalog a host routes, typed by it (`src/protocol/command-catalog.ts`). */
  call<K extends RoutedCommandName>(name: K, input: CommandInput<K>): Promise<CommandResult<K>>;
  snapshot(): Promise<SessionSnapshot>;
  /** Where the turn stands, once it has ended or `waitMs` has passed (0: at once), or `gone` fired. */
  turnState(turnId: string, waitMs: number, gone?: AbortSignal): Promise<TurnStatusResult>;
  contextWindow(): Promise<ContextWindowPreview>;
  /** The feed an event stream resuming after `after` (null: a new client) reads. */
  updateFeed(after: number | null): Promise<UpdateFeed>;
}
