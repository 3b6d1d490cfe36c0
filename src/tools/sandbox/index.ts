/**
 * How a command runs: in what sandbox (bubblewrap, or none: `--sandbox auto|bwrap|off`), under what
 * containment (bubblewrap's PID namespace, one of its own, or a process group where there is none),
 * with what environment, and always tied to the host's lifetime — recorded while it runs, so a host
 * that died has its commands ended at the next start.
 */
export { reapLeftoverCommands, type ReapReport } from './command-ledger.js';
