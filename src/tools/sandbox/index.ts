/**
 * How a command runs: under what containment (a PID namespace, or a process group where there is
 * none; bubblewrap, with a file-system sandbox, to come), with what environment, and always tied to
 * the host's lifetime — recorded while it runs, so a host that died has its commands ended at the
 * next start.
 */
export { reapLeftoverCommands, type ReapReport } from './command-ledger.js';
