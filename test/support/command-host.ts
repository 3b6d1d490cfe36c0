/**
 * A process that runs one command through the run_command tool, then waits to be killed: run as
 * `node --import tsx test/support/command-host.ts CONTAINMENT WORKSPACE COMMAND` (CONTAINMENT `auto`
 * or `process-group`). The test SIGKILLs it while the command runs, to see what outlives it
 * (test/hostile/command-lifetime.test.ts). Its ledger is under its TMPDIR.
 */
import { workspaceTools } from '../../src/index.js';

const [containment, root, command] = process.argv.slice(2);
if ((containment !== 'auto' && containment !== 'process-group') || !root || !command) {
  throw new Error('usage: command-host.ts auto|process-group WORKSPACE COMMAND');
}
const tool = workspaceTools({ root, commandContainment: containment }).find((t) => t.name === 'run_command')!;
const signal = new AbortController().signal;
await tool.execute({ command }, { sessionId: 's', turnId: 't', toolCallId: 'c', signal, progress: () => undefined, approvedPaths: [] });
await new Promise(() => undefined);
