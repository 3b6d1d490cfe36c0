/**
 * What a warning may say besides its text: the session, turn or task it is about, and the error
 * behind it. The text still names them, so an embedder whose `warn` takes one argument loses
 * nothing; a structured logger (`turnchart serve`'s) keeps them as fields to filter on.
 */
export interface LogFields {
  sessionId?: string;
  turnId?: string;
  taskId?: string;
  error?: unknown;
}

/** Where non-fatal notes go. A one-argument function is one too: the fields are optional. */
export type Warn = (message: string, fields?: LogFields) => void;
