/** A typed error for what cannot be a command result: bad configuration, unknown sessions. */
export class TurnchartError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'TurnchartError';
  }
}
