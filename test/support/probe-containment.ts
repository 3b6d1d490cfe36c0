/**
 * Prints, as one JSON line, the containment this process finds and what run_command answers for
 * `echo $$` (the command's pid, 2 in a namespace of its own): run as
 * `node --import tsx test/support/probe-containment.ts`, under another user id by a test
 * (test/tools/containment.test.ts).
 */
import { workspaceTools } from '../../src/index.js';
import { probeContainment } from '../../src/tools/sandbox/containment.js';

const tool = workspaceTools({ root: '/tmp' }).find((t) => t.name === 'run_command')!;
const signal = new AbortController().signal;
const result = await tool.execute({ command: 'echo $$' }, { sessionId: 's', turnId: 't', toolCallId: 'c', signal, progress: () => undefined, approvedPaths: [] });
process.stdout.write(`${JSON.stringify({ containment: probeContainment(), result })}\n`);
