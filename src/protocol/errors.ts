import type { LeaseHolder } from './session-owner.js';
import { messageOf } from './error-message.js';

/** A typed error for what cannot be a command result: bad configuration, unknown sessions, storage failures. */
export class TurnchartError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TurnchartError';
  }
}

/** Another live runtime holds the session's lease: who, so a cluster host can route the command to it. */
export class SessionOwnedElsewhereError extends TurnchartError {
  constructor(
    sessionId: string,
    readonly holder: LeaseHolder,
  ) {
    super('SessionOwnedElsewhere', `session '${sessionId}' is held by ${holder.ownerId} (pid ${holder.pid} on ${holder.host})`);
  }
}

/**
 * A storage failure as a typed error: `PersistenceError`, its message led by the database's own
 * code (`SQLITE_READONLY`, `SQLITE_FULL`, PostgreSQL's SQLSTATE) so the first cause is what a caller
 * reads. Typed errors pass through unchanged.
 */
export function persistenceError(error: unknown): TurnchartError {
  if (error instanceof TurnchartError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'SessionOwnedElsewhere') return new TurnchartError('SessionOwnedElsewhere', (error as Error).message, { cause: error });
  const message = messageOf(error);
  return new TurnchartError('PersistenceError', typeof code === 'string' ? `${code}: ${message}` : message, { cause: error });
}

export type WorldStateErrorCode = 'user_project_context_error' | 'project_instruction_error' | 'skill_catalog_task_error';

/** A source that cannot be read fails the turn with its section's code, before any model call. */
export class WorldStateError extends Error {
  constructor(
    readonly code: WorldStateErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WorldStateError';
  }
}
