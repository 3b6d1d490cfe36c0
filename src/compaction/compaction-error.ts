import { TurnFailure } from '../protocol/tool-result.js';

/**
 * A compaction that failed. `reloadRequired` says the checkpoint was stored but the conversation
 * could not be installed from it (CP-4): chat state and storage may now disagree.
 */
export class CompactionError extends TurnFailure {
  constructor(
    message: string,
    readonly reloadRequired = false,
    /** A command-level code for a manual compaction or rewind, e.g. `UnknownCompaction`. */
    readonly commandCode: string = reloadRequired ? 'ReloadRequired' : 'CompactionFailed',
  ) {
    super('compaction_error', message);
    this.name = 'CompactionError';
  }
}
