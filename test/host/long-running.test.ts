import { firstValueFrom, filter } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, scriptedModel, sqliteStorage } from '../../src/index.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { finished, newSession, postTurn, testHost, type TestHost } from '../support/host.js';
import { SseClient } from '../support/sse-client.js';
import { runTurn } from '../support/harness.js';

describe.each(durableTargets)('a long-running host on $name: idle sessions leave memory and come back', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let host: TestHost | undefined;
  afterEach(async () => {
    await host?.close();
    await db?.drop();
    host = undefined;
    db = undefined;
  });

  it.skipIf(skip)('closes a session nothing uses and reopens it transparently on its next request, numbering on', async () => {
    db = create();
    host = await testHost(db, [{ text: 'one' }, { text: 'two' }], { idleTtlSeconds: 0 });
    const sessionId = await newSession(host);
    const turn = await postTurn(host, sessionId, 'r1');
    await finished(host, sessionId, turn.body.turnId as string);
    await closing(host, sessionId);
    expect(host.runtime.isOpen(sessionId)).toBe(false);
    expect(host.runtime.openSessionCount).toBe(0);

    const reopened = await host.call('GET', `/sessions/${sessionId}`);
    expect(reopened.status).toBe(200);
    const before = reopened.body.lastUpdateSequence as number;
    expect(before).toBeGreaterThan(0);
    const sse = await SseClient.connect(`${host.url}/sessions/${sessionId}/events`, { 'last-event-id': String(before) });
    const second = await postTurn(host, sessionId, 'r2');
    expect((await sse.nextUpdate('turn_started')).sequence).toBe(before + 1);
    expect(await finished(host, sessionId, second.body.turnId as string)).toMatchObject({ outcome: { finalText: 'two' } });
    // Watched sessions stay open; once the watcher leaves, the session goes.
    expect(host.runtime.isOpen(sessionId)).toBe(true);
    const closedAgain = closing(host, sessionId);
    sse.close();
    await closedAgain;
    expect(host.runtime.openSessionCount).toBe(0);
  });

  it.skipIf(skip)('keeps nothing of sessions used one after another: the runtime holds none of them afterwards', async () => {
    db = create();
    host = await testHost(db, Array.from({ length: 200 }, () => ({ text: 'ok' })), { idleTtlSeconds: 0 });
    for (let i = 0; i < 200; i++) {
      const sessionId = await newSession(host);
      const turn = await postTurn(host, sessionId, `r${i}`);
      expect(await finished(host, sessionId, turn.body.turnId as string)).toMatchObject({ status: 'completed' });
    }
    const runtime = host.runtime;
    if (runtime.openSessionCount > 0) await firstValueFrom(runtime.sessionClosed$.pipe(filter(() => runtime.openSessionCount === 0)));
    expect(runtime.openSessionCount).toBe(0);
  }, 90_000);
});

/** Resolves once the session is not open (at once if it is already closed). */
function closing(host: TestHost, sessionId: string): Promise<unknown> {
  if (!host.runtime.isOpen(sessionId)) return Promise.resolve();
  return firstValueFrom(host.runtime.sessionClosed$.pipe(filter((id) => id === sessionId)));
}

describe('closing a session in an embedded host', () => {
  it('removes it from the runtime; its handle answers SessionClosed; opening it again gives a live handle', async () => {
    const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([{ text: 'a' }, { text: 'b' }]) });
    try {
      const session = await runtime.createSession();
      await runTurn(session, 'first');
      await session.close();
      expect(runtime.isOpen(session.id)).toBe(false);
      expect(session.isOpen).toBe(false);
      expect(await session.startTurn({ clientRequestId: 'late', input: [{ type: 'text', text: 'x' }] })).toEqual({ ok: false, error: { code: 'SessionClosed' } });
      const again = await runtime.openSession(session.id);
      expect(again).not.toBe(session);
      expect((await runTurn(again, 'second')).outcome).toEqual({ status: 'completed', finalText: 'b' });
    } finally {
      await runtime.shutdown();
    }
  });
});
