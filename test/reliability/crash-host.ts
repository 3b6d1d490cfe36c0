/**
 * A host process for the crash test: runs one turn on the given database and stops at five points
 * of it — printing `POINT <name>` and waiting for `go` on stdin — so the test can SIGKILL it at exactly
 * that point: while the model streams, right after the assistant message is stored, inside the tool
 * (after its side effect), right after the tool result is stored, and while waiting for an approval.
 * It also prints `CALL <method>` as each storage call starts, without waiting, so the test can kill
 * it at a moment drawn at random: the host runs on while the signal is on its way.
 *
 *   node --import tsx test/reliability/crash-host.ts '{"sqlite":"/tmp/x.db","effects":"/tmp/log"}'
 *                                                   | '{"postgres":"…","schema":"…","effects":"/tmp/log"}'
 *
 * The harness runs it bundled (`test/support/crash-host-bundle.ts`), which starts four times faster.
 */
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { createRuntime, defineTool, postgresStorage, sqliteStorage, type ModelPort, type SessionStorage } from '../../src/index.js';

const target = JSON.parse(process.argv[2] ?? '{}') as { sqlite?: string; postgres?: string; schema?: string; effects: string };

const lines = createInterface({ input: process.stdin });
const waiting: (() => void)[] = [];
lines.on('line', () => waiting.shift()?.());

/** Prints the point and resumes when the test says `go`. */
function point(name: string): Promise<void> {
  return new Promise((resume) => {
    waiting.push(resume);
    process.stdout.write(`POINT ${name}\n`);
  });
}

/** The real storage with pauses after the writes the test wants to crash right behind. */
function pausing(inner: SessionStorage): SessionStorage {
  return new Proxy(inner, {
    get(storage, name, receiver) {
      const value: unknown = Reflect.get(storage, name, receiver);
      if (typeof value !== 'function') return value;
      // Every storage call is announced (without waiting), so the test can also kill at a call it drew at random.
      const announced = (...args: unknown[]): unknown => {
        process.stdout.write(`CALL ${String(name)}\n`);
        return (value as (...a: unknown[]) => unknown).apply(storage, args);
      };
      if (name !== 'appendMessage') return announced;
      return async (...args: Parameters<SessionStorage['appendMessage']>) => {
        process.stdout.write('CALL appendMessage\n');
        await storage.appendMessage(...args);
        const role = args[0].message.role;
        if (role === 'assistant' && args[0].message.toolCalls.length > 0) await point('after-assistant-write');
        if (role === 'tool') await point('after-result-write');
      };
    },
  });
}

let calls = 0;
const model: ModelPort = {
  capabilities: { contextWindow: 100_000, maxOutputTokens: 2_000, maxReasoningTokens: 0 },
  async *stream() {
    calls += 1;
    yield { type: 'text_delta', text: 'working' };
    if (calls === 1) await point('model-stream');
    const toolCalls =
      calls === 1 ? [{ id: 'call-deploy', name: 'deploy', argumentsText: '{}' }] : calls === 2 ? [{ id: 'call-publish', name: 'publish', argumentsText: '{}' }] : [];
    yield { type: 'response_completed', response: { text: calls < 3 ? 'working' : 'done', reasoning: '', toolCalls } };
  },
};

const deploy = defineTool({
  name: 'deploy',
  description: 'has a side effect',
  effect: 'read',
  input: z.object({}),
  execute: async () => {
    appendFileSync(target.effects, 'deploy\n');
    await point('inside-tool');
    return { status: 'succeeded', content: 'deployed' };
  },
});
const publish = defineTool({
  name: 'publish',
  description: 'needs an approval',
  effect: 'write',
  input: z.object({}),
  execute: async () => {
    appendFileSync(target.effects, 'publish\n');
    return { status: 'succeeded', content: 'published' };
  },
});

const storage = target.postgres ? postgresStorage({ connectionString: target.postgres, schema: target.schema }) : sqliteStorage({ filename: target.sqlite! });
// The crash harness checks RT-24's correction at every kill point: sessions that do not resume their turns (issue 26's resumption: test/runtime/durability/resume.test.ts, test/host/turn-chaos-sqlite.test.ts).
const runtime = await createRuntime({ storage: pausing(storage), model, tools: [deploy, publish], resumeTurns: false });
const session = await runtime.createSession({ permissionMode: 'ask' });
session.updates$.subscribe((u) => {
  if (u.update.type !== 'permission_requested') return;
  const { toolCallId } = u.update;
  void point('waiting-approval').then(() => session.resolvePermission({ turnId: u.turnId, toolCallId, decision: 'allow_once' }));
});
process.stdout.write(`SESSION ${session.id}\n`);
const started = await session.startTurn({ clientRequestId: 'crash-1', input: [{ type: 'text', text: 'deploy and publish' }] });
if (!started.ok) throw new Error('refused');
const outcome = await session.waitForTurn(started.turnId);
process.stdout.write(`DONE ${JSON.stringify(outcome)}\n`);
await runtime.shutdown();
process.exit(0);
