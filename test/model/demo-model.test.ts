import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, sqliteStorage, workspaceTools, type Runtime } from '../../src/index.js';
import { demoModel } from '../../src/model/demo-model.js';

let runtime: Runtime | undefined;
let dir: string | undefined;
afterEach(async () => {
  await runtime?.shutdown();
  runtime = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The demo model's answer to "what is here" in a workspace holding `files`, through the real `list_dir`. */
async function answerFor(files: string[]): Promise<string> {
  dir = await mkdtemp(path.join(os.tmpdir(), 'turnchart-demo-'));
  const workspace = path.join(dir, 'workspace');
  await mkdir(workspace);
  for (const file of files) await writeFile(path.join(workspace, file), 'x');
  runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: demoModel(), tools: workspaceTools({ root: workspace }) });
  const session = await runtime.createSession({ agent: 'default', permissionMode: 'auto' });
  const started = await session.startTurn({ clientRequestId: 'r', input: [{ type: 'text', text: 'what is in here?' }] });
  if (!started.ok) throw new Error(JSON.stringify(started.error));
  const outcome = await session.waitForTurn(started.turnId);
  expect(outcome.status).toBe('completed');
  return outcome.status === 'completed' ? outcome.finalText : '';
}

describe('the demo model summing up the workspace', () => {
  it('says an empty workspace is empty', async () => {
    expect(await answerFor([])).toBe('The workspace is empty.');
  });

  it('names one entry in the singular', async () => {
    expect(await answerFor(['a.md'])).toBe('The workspace has one entry: a.md.');
  });

  it('names up to five entries', async () => {
    expect(await answerFor(['a.md', 'b.md', 'c.md'])).toBe('The workspace has 3 entries: a.md, b.md, c.md.');
  });

  it('names the first five of more', async () => {
    expect(await answerFor(['a', 'b', 'c', 'd', 'e', 'f', 'g'])).toBe('The workspace has 7 entries, among them a, b, c, d, e.');
  });
});
