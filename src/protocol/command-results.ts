import type { InvalidInput } from './commands.js';
import type { TurnOutcome } from './outcome.js';
import type { UpdateEnvelope } from './updates.js';

/**
 * What a session's commands answer (`SessionHandle`, and the same over HTTP and between cluster
 * hosts): a value for every outcome, never a throw.
 */

/** The session was closed (stopped, evicted when idle, or its runtime shut down): open it again for a live handle. */
export type Stopped = { code: 'RuntimeStopped' } | { code: 'SessionClosed' };

type Persistence = { code: 'PersistenceError'; message: string };

export type StartTurnResult =
  | { ok: true; turnId: string; queued?: true }
  | {
      ok: false;
      error:
        | { code: 'Busy'; turnId: string }
        | { code: 'EmptyInput' }
        | { code: 'ReloadRequired' }
        | { code: 'SessionActive' }
        | { code: 'UnknownSkill'; name: string }
        | { code: 'SkillTooLarge'; name: string; tokens: number }
        | InvalidInput
        | Stopped;
    };

/**
 * The service's answer to a turn (RL-1): given only once the turn's input is durable — its row and
 * user message for a turn that starts at once, its queued row for one that waits.
 */
export type SubmitTurnResult =
  | { ok: true; turnId: string; runId: string; status: TurnStatus }
  | { ok: false; error: Exclude<StartTurnResult, { ok: true }>['error'] | Persistence };

/** Where a turn stands: waiting, running, or its stored terminal status. */
type TurnStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'timed_out' | 'interrupted';

export type TurnStatusResult = { ok: true; turnId: string; status: TurnStatus; outcome?: TurnOutcome } | { ok: false; error: { code: 'UnknownTurn' } };

export type CancelTurnResult = { ok: true } | { ok: false; error: { code: 'TurnNotActive' } | InvalidInput | Stopped | Persistence };
export type ResolvePermissionResult =
  | { ok: true }
  | { ok: false; error: { code: 'TurnNotActive' } | { code: 'PermissionNotPending' } | InvalidInput | Stopped };
export type DeliverResult =
  | { ok: true }
  | { ok: false; error: { code: 'MessageTooLarge'; tokens: number } | { code: 'MailboxFull'; messages: number; tokens: number } | InvalidInput | Stopped };
export type SwitchAgentResult =
  | { ok: true; agent: string }
  | { ok: false; error: { code: 'UnknownAgent'; message: string } | { code: 'AgentSwitchNotAllowed'; message: string } | { code: 'SessionActive' } | { code: string; message: string } | InvalidInput | Stopped };
export type SetModeResult = { ok: true } | { ok: false; error: { code: 'PersistenceError'; message: string } | InvalidInput | Stopped };
export type WaitResult = TurnOutcome | { status: 'unknown_turn' };
export type CompactResult =
  | { ok: true; compactionId: string }
  | { ok: false; error: { code: 'SessionActive' } | { code: 'ReloadRequired' } | { code: string; message: string } | Stopped };
export type RewindResult =
  | { ok: true }
  | { ok: false; error: { code: 'SessionActive' } | { code: 'UnknownCompaction'; message: string } | { code: string; message: string } | InvalidInput | Stopped };

/** The updates after a sequence, or `SnapshotRequired` when some of them are no longer in the replay ring. */
export type ReplayResult = { ok: true; updates: UpdateEnvelope[] } | { ok: false; error: { code: 'SnapshotRequired' } };
