/**
 * How a command runs: under what containment (a PID namespace, or a process group where there is
 * none; bubblewrap, with a file-system sandbox, to come), with what environment, and always tied to
 * the host's lifetime — recorded while it runs, so a host that died has its commands ended at the
 * next start.
 */
export { commandContainment, probeContainment, lifetimeDescription, type Containment, type ContainmentChoice } from './containment.js';
export { commandEnvironment, commandEnvFlagSchema, environmentNameSchema, type CommandEnvironment, type CommandEnvironmentOptions } from './command-environment.js';
export { commandSettings, type CommandOptions, type CommandSettings } from './command-settings.js';
export { reapLeftoverCommands, recordCommand, defaultLedgerDir, type LedgerEntry, type LedgerRecord, type ReapReport } from './command-ledger.js';
export { runContained, type ContainedRun, type ContainedRunOptions } from './run-contained.js';
export { COMMAND_MARKER_VARIABLE, killMarked, pidsMarked } from './process-table.js';
