import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workspaceTools } from '../../src/index.js';
import { useFifoHolders } from '../support/fifo-holders.js';
import { harness, startTurn, type Harness } from '../support/harness.js';
import { useTempDirs } from '../support/workspace.js';
import { toolResults } from './support.js';

const tempDir = useTempDirs('turnchart-cancel-');
const fifo = useFifoHolders();

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

/** The shell and two background sleeps hold the FIFO `holders`: its end-of-file means all three are gone. */
const SLEEPERS = 'exec 3>holders; sleep 100 & sleep 100 & echo ready >&3; wait';

describe('run_command in a real turn', () => {
  it('cancelTurn while it runs: the turn ends cancelled, the stored result is cancelled, the whole group is killed', async () => {
    const root = await tempDir();
    h = await harness([{ text: 'running', toolCalls: [{ id: 'x1', name: 'run_command', args: { command: SLEEPERS } }] }], {
      tools: workspaceTools({ root }),
      permissionMode: 'auto',
    });
    const holders = fifo(path.join(root, 'holders'));
    const turnId = await startTurn(h.session, 'run');
    await holders.read('ready');
    expect(await h.session.cancelTurn(turnId)).toEqual({ ok: true });
    expect(await h.session.waitForTurn(turnId)).toEqual({ status: 'cancelled' });
    expect(await toolResults(h)).toMatchObject([{ toolCallId: 'x1', toolName: 'run_command', status: 'cancelled' }]);
    await holders.allClosed();
  });

  it('a runtime shutdown while it runs kills the group too, parking the turn (issue 26)', async () => {
    const root = await tempDir();
    h = await harness([{ text: 'running', toolCalls: [{ id: 'x1', name: 'run_command', args: { command: SLEEPERS } }] }], {
      tools: workspaceTools({ root }),
      permissionMode: 'auto',
    });
    const holders = fifo(path.join(root, 'holders'));
    const turnId = await startTurn(h.session, 'run');
    await holders.read('ready');
    const outcome = h.session.waitForTurn(turnId);
    await h.runtime.shutdown();
    h = undefined;
    // The turn is left for the next host to go on with; the command does not outlive this one.
    expect(await outcome).toEqual({ status: 'parked' });
    await holders.allClosed();
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
