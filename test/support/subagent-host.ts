/**
 * A process that holds a parent session and its running child, then waits to be killed: run as
 * `node --import tsx test/support/subagent-host.ts DB_FILE`. The parent's turn spawns a `worker`
 * and waits for it; the worker's model call never answers. Once both turns run it prints
 * `RUNNING <parentId> <childId>`, and the test SIGKILLs it there (test/runtime/subagents/subagents-crash.test.ts).
 */
import { createRuntime, sqliteStorage, type ModelRequest, type ScriptedReply } from '../../src/index.js';
import { routedModel } from './routed-model.js';
import { CRASH_AGENTS, LEAD_PROMPT, WORKER_PROMPT } from './subagent-agents.js';

const file = process.argv[2];
if (!file) throw new Error('usage: subagent-host.ts DB_FILE');

let workerCalled!: () => void;
const workerRunning = new Promise<void>((resolve) => (workerCalled = resolve));
const spawned = (request: ModelRequest) => {
  const result = request.messages.find((m) => m.role === 'tool' && m.toolName === 'spawn_agent');
  return result?.role === 'tool' ? (JSON.parse(result.content) as { agentId: string }).agentId : '';
};
const { port } = routedModel({
  lead: {
    prompt: LEAD_PROMPT,
    steps: [
      { text: 'delegating', toolCalls: [{ id: 'spawn-1', name: 'spawn_agent', args: { agent: 'worker', task: 'work forever' } }] },
      (request) => ({ text: '', toolCalls: [{ id: 'wait-1', name: 'wait_agent', args: { agentId: spawned(request), timeoutMs: 3_600_000 } }] }),
    ],
  },
  worker: { prompt: WORKER_PROMPT, steps: [() => (workerCalled(), new Promise<ScriptedReply>(() => undefined))] },
});

const runtime = await createRuntime({
  storage: sqliteStorage({ filename: file }),
  model: port,
  agents: CRASH_AGENTS,
  // RT-24 for a parent and its child as it stays where turns are not resumed (issue 26 resumes neither a child's turn nor, here, the parent's).
  resumeTurns: false,
});
const parent = await runtime.createSession({ agent: 'lead', permissionMode: 'ask' });
const started = await parent.startTurn({ clientRequestId: 'crash-1', input: [{ type: 'text', text: 'delegate and wait' }] });
if (!started.ok) throw new Error(JSON.stringify(started.error));
await workerRunning;
const { children } = await runtime.agentLinks(parent.id);
process.stdout.write(`RUNNING ${parent.id} ${children[0]!.sessionId}\n`);
await new Promise(() => undefined);
