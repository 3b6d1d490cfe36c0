import { z } from 'zod';
import { createRuntime, defineTool, scriptedModel, sqliteStorage } from 'turnchart';

const model = scriptedModel([
  { text: 'let me look', toolCalls: [{ name: 'read_file', args: { path: 'a.txt' } }] },
  { text: 'a.txt says hello' },
]);

const storage = sqliteStorage({ filename: ':memory:' }); // or postgresStorage({ connectionString })
const runtime = await createRuntime({
  storage,
  model,
  tools: [
    defineTool({
      name: 'read_file',
      description: 'Read a file',
      effect: 'read',
      input: z.object({ path: z.string() }),
      execute: async (args, { signal }) => {
        signal.throwIfAborted();
        return { status: 'succeeded', content: `hello from ${args.path}` };
      },
    }),
  ],
});

const session = await runtime.createSession({ agent: 'default', permissionMode: 'ask' });
session.updates$.subscribe((u) => console.log(u.sequence, u.update.type));

const started = await session.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: 'what is in a.txt?' }] });
if (!started.ok) throw new Error(`refused: ${started.error.code}`);

const outcome = await session.waitForTurn(started.turnId);
console.log(outcome); // { status: 'completed', finalText: 'a.txt says hello' }
console.log(model.requests.length); // 2: the tool result went back to the model

await runtime.shutdown();
export { outcome };
