import { describe, expect, it } from 'vitest';
import { harness } from '../support/harness.js';

describe('smoke', () => {
  it('runs a tool turn', async () => {
    const h = await harness([
      { text: 'let me look', toolCalls: [{ name: 'read_file', args: { path: 'a.txt' } }] },
      { text: 'done' },
    ]);
    const started = await h.session.startTurn({ clientRequestId: 'c1', input: [{ type: 'text', text: 'hi' }] });
    expect(started.ok).toBe(true);
    if (!started.ok) return;
    const outcome = await h.session.waitForTurn(started.turnId);
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });
    console.log(h.updates.map((u) => `${u.sequence} ${JSON.stringify(u.update)}`).join('\n'));
    await h.runtime.shutdown();
  });
});
