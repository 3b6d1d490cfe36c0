import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, scriptedModel, type Runtime, type SessionHandle } from '../../../src/index.js';
import { durableTargets, type DurableDatabase } from '../../support/databases.js';
import { crash } from '../../support/harness.js';
import { gatedStep } from '../../support/host.js';

const ask = (session: SessionHandle, clientRequestId: string) => session.submitTurn({ clientRequestId, input: [{ type: 'text', text: clientRequestId }] });

describe.each(durableTargets)('queued turns survive the host on $name (RL-2)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const r of runtimes.splice(0)) await r.shutdown().catch(() => undefined);
    await db?.drop();
    db = undefined;
  });

  for (const ending of ['a clean shutdown', 'a crash'] as const) {
    it.skipIf(skip)(`starts them, in order, in the next runtime after ${ending}`, async () => {
      db = create();
      const gate = gatedStep({ text: 'never seen' });
      const first = await createRuntime({ storage: db.open(), model: scriptedModel([gate.step]) });
      runtimes.push(first);
      const session = await first.createSession({ busyPolicy: 'enqueue' });
      const running = await ask(session, 'r1');
      await gate.reached;
      const queued = [await ask(session, 'r2'), await ask(session, 'r3')];
      expect(queued.map((q) => q.ok && q.status)).toEqual(['queued', 'queued']);
      if (ending === 'a crash') crash(first);
      else await first.shutdown();

      const storage = db.open();
      // Issue 26: the turn that was running goes on first (its model call made again), then the queue.
      const second = await createRuntime({ storage, model: scriptedModel([{ text: 'one' }, { text: 'two' }, { text: 'three' }]) });
      runtimes.push(second);
      // Nobody asked for the session: the runtime opened it to run its queue.
      expect(second.isOpen(session.id)).toBe(true);
      const reopened = await second.openSession(session.id);
      const outcomes = await Promise.all([running, ...queued].map((q) => reopened.waitForTurn(q.ok ? q.turnId : '')));
      expect(outcomes).toEqual([
        { status: 'completed', finalText: 'one' },
        { status: 'completed', finalText: 'two' },
        { status: 'completed', finalText: 'three' },
      ]);
      const turns = await storage.listTurns(session.id);
      const byRequest = Object.fromEntries(turns.map((t) => [t.clientRequestId, t.status]));
      expect(byRequest).toEqual({ r1: 'completed', r2: 'completed', r3: 'completed' });
      const texts = (await storage.listMessages(session.id)).flatMap((m) => (m.message.role === 'user' && m.message.kind === 'normal' ? [m.message.text] : []));
      expect(texts).toEqual(['r1', 'r2', 'r3']);
      expect(running.ok).toBe(true);
    });
  }
});
