import type { CommandResult } from './command-catalog.js';
import type { CommandError } from './command-errors.js';
import type { StoredTurnStatus, TurnOutcome } from './outcome.js';
import type { UpdateEnvelope } from './updates.js';

/**
 * What a session's commands answer (`SessionHandle`, and the same over HTTP and between cluster
 * hosts): a value for every outcome, never a throw. The commands' results are the catalog's
 * (`command-catalog.ts`), named here as the package exports them; the rest answer queries.
 */

/** The session was closed (stopped, evicted when idle, or its runtime shut down): open it again for a live handle. */
export type Stopped = CommandError<'RuntimeStopped' | 'SessionClosed'>;

export type StartTurnResult = CommandResult<'startTurn'>;
/**
 * The service's answer to a turn (RL-1): given only once the turn's input is durable — its row and
 * user message for a turn that starts at once, its queued row for one that waits.
 */
export type SubmitTurnResult = CommandResult<'submitTurn'>;
export type CancelTurnResult = CommandResult<'cancelTurn'>;
export type ResolvePermissionResult = CommandResult<'resolvePermission'>;
export type DeliverResult = CommandResult<'deliverAgentMessage'>;
export type SwitchAgentResult = CommandResult<'switchAgent'>;
export type SetModeResult = CommandResult<'setPermissionMode'>;
export type CompactResult = CommandResult<'compactConversation'>;
export type RewindResult = CommandResult<'rewindConversation'>;

/** Where a turn stands now: waiting, running, or its stored terminal status. */
export type TurnStatusResult = { ok: true; turnId: string; status: StoredTurnStatus; outcome?: TurnOutcome } | { ok: false; error: { code: 'UnknownTurn' } };
/**
 * `parked` (issue 26): the session was parked here (its runtime shutting down, or evicted while its
 * turn waited for an approval) with the turn unfinished; it goes on when the session is next opened,
 * on this runtime or another, and ends there.
 */
export type WaitResult = TurnOutcome | { status: 'unknown_turn' } | { status: 'parked' };

/** The updates after a sequence, or `SnapshotRequired` when some of them are no longer in the replay ring. */
export type ReplayResult = { ok: true; updates: UpdateEnvelope[] } | { ok: false; error: { code: 'SnapshotRequired' } };
