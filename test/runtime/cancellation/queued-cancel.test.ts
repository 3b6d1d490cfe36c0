import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, scriptedModel, sqliteStorage, withFaults, type Runtime, type ScriptedReply } from '../../../src/index.js';

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.shutdown();
  runtime = undefined;
});

describe('a queued turn cancelled before its queued row is written (RL-2)', () => {
  // Found by the generated session paths (test/paths/): `startTurn` answers before the queued row is
  // written, and a cancel that came before that write finished waited on a durability signal the
  // write never settled. The cancel was never stored (the row stayed `queued`, so the turn would
  // start when the session was next opened) and `cancelTurn` never answered.
  it('stores the cancel and answers once the row is written', async () => {
    let finishFirst: (reply: ScriptedReply) => void = () => undefined;
    const firstCall = new Promise<ScriptedReply>((resolve) => (finishFirst = resolve));
    const storage = withFaults(sqliteStorage({ filename: ':memory:' }));
    runtime = await createRuntime({ storage, model: scriptedModel([() => firstCall]) });
    const session = await runtime.createSession({ busyPolicy: 'enqueue' });
    const first = await session.startTurn({ clientRequestId: 'one', input: [{ type: 'text', text: 'first' }] });
    const second = await session.startTurn({ clientRequestId: 'two', input: [{ type: 'text', text: 'second' }] });
    if (!first.ok || !second.ok) throw new Error('both turns are accepted');
    expect(second.queued).toBe(true);

    const cancelled = session.cancelTurn(second.turnId);
    finishFirst({ text: 'done' });
    expect(await session.waitForTurn(first.turnId)).toEqual({ status: 'completed', finalText: 'done' });

    expect((await storage.getTurn(second.turnId))?.status).toBe('cancelled');
    expect(await cancelled).toEqual({ ok: true });
    expect(await session.waitForTurn(second.turnId)).toEqual({ status: 'cancelled' });
    expect(storage.calls.filter((c) => c.method === 'beginTurn')).toHaveLength(1);
  });
});
