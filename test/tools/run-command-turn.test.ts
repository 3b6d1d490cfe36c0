import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workspaceTools } from '../../src/index.js';
import { harness, startTurn, type Harness } from '../support/harness.js';
import { useTempDirs } from '../support/workspace.js';
import { eventually, isAlive, pidsIn, toolResults } from './support.js';

const tempDir = useTempDirs('turnchart-cancel-');

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const SLEEPERS = 'sleep 100 & echo $! > pids; sleep 100 & echo $! >> pids; echo $$ >> pids; wait';

describe('run_command in a real turn', () => {
  it('cancelTurn while it runs: the turn ends cancelled, the stored result is cancelled, the whole group is killed', async () => {
    const root = await tempDir();
    h = await harness([{ text: 'running', toolCalls: [{ id: 'x1', name: 'run_command', args: { command: SLEEPERS } }] }], {
      tools: workspaceTools({ root }),
      permissionMode: 'auto',
    });
    const turnId = await startTurn(h.session, 'run');
    const pids = await pidsIn(path.join(root, 'pids'), 3);
    expect(pids.every(isAlive)).toBe(true);
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(await toolResults(h)).toMatchObject([{ toolCallId: 'x1', toolName: 'run_command', status: 'cancelled' }]);
    await eventually(() => pids.every((pid) => !isAlive(pid)), 'the shell and both sleeps are gone');
  });

  it('a runtime shutdown while it runs kills the group too', async () => {
    const root = await tempDir();
    h = await harness([{ text: 'running', toolCalls: [{ id: 'x1', name: 'run_command', args: { command: SLEEPERS } }] }], {
      tools: workspaceTools({ root }),
      permissionMode: 'auto',
    });
    const turnId = await startTurn(h.session, 'run');
    const pids = await pidsIn(path.join(root, 'pids'), 3);
    const outcome = h.session.waitForTurn(turnId);
    await h.runtime.shutdown();
    h = undefined;
    expect(await outcome).toMatchObject({ status: 'failed', code: 'actor_stopped' });
    await eventually(() => pids.every((pid) => !isAlive(pid)), 'the shell and both sleeps are gone');
  });

  it('a finished command goes back to the model with its exit code', async () => {
    const root = await tempDir();
    h = await harness([{ text: 'running', toolCalls: [{ id: 'x1', name: 'run_command', args: { command: 'echo hi; exit 2' } }] }, { text: 'it failed' }], {
      tools: workspaceTools({ root }),
      permissionMode: 'auto',
    });
    const turnId = await startTurn(h.session, 'run');
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'it failed' });
    expect(await toolResults(h)).toMatchObject([{ status: 'failed', content: 'exit code 2\nhi\n' }]);
    expect(h.model.requests[1]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'exit code 2\nhi\n' });
  });
});
