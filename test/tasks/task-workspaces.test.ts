import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { submitTask, workspaceTools, type ModelPort } from '../../src/index.js';
import { DEFAULT_CAPABILITIES, replay } from '../../src/model/scripted-model.js';
import type { RequestMessage } from '../../src/protocol/model.js';
import { principalDirName } from '../../src/tools/workspace/user-directory.js';
import { until } from '../support/poll.js';
import { TASK_SUITE_SKIP, TaskStack } from '../support/task-stack.js';
import { useTempDirs } from '../support/workspace.js';

/**
 * A worker's tasks work where their submitter's sessions on a host do: a principal's in their own
 * directory beneath the worker's workspace, the operator's (or one stored without a principal) in
 * the whole workspace. PostgreSQL, RabbitMQ, a real worker and the real workspace tools.
 */
const tempDir = useTempDirs('turnchart-task-workspaces-');

/** Writes `out.md` with the prompt as its content, then answers. */
function writingModel(): ModelPort {
  return {
    capabilities: DEFAULT_CAPABILITIES,
    async *stream(request) {
      const last = request.messages.at(-1) as RequestMessage;
      if (last.role === 'tool') return yield* replay({ text: 'done' });
      const prompt = request.messages.findLast((m): m is Extract<RequestMessage, { role: 'user' }> => m.role === 'user' && m.text.startsWith('write '))!;
      yield* replay({ toolCalls: [{ id: `w-${prompt.text}`, name: 'write_file', args: { path: 'out.md', content: prompt.text } }] });
    },
  };
}

describe.skipIf(TASK_SUITE_SKIP !== null)("a worker's tasks in their submitter's directory (PostgreSQL + RabbitMQ)", () => {
  let stack: TaskStack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it("runs a user's task in users/<hash>, the operator's and an unowned one in the workspace", async () => {
    stack = await new TaskStack().ready();
    const root = await tempDir();
    await stack.worker({ model: writingModel(), tools: workspaceTools({ root, sandbox: 'off' }), workspace: root });
    const link = await stack.link();
    const client = { tasks: stack.tasks, link, namespace: stack.namespace };
    await submitTask(client, { taskId: 'of-alice', prompts: ['write alice'] }, 'alice');
    await submitTask(client, { taskId: 'of-operator', prompts: ['write operator'] }, 'operator');
    for (const id of ['of-alice', 'of-operator']) await until(`${id} completed`, async () => (await stack!.tasks.getTask(id))?.state === 'COMPLETED');

    expect(await readFile(path.join(root, 'users', principalDirName('alice'), 'out.md'), 'utf8')).toBe('write alice');
    expect(await readFile(path.join(root, 'out.md'), 'utf8')).toBe('write operator');
    expect(existsSync(path.join(root, 'users', principalDirName('operator')))).toBe(false);
  });
});
