import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, scriptedModel, type Runtime } from '../../src/index.js';
import { traceParentSchema } from '../../src/protocol/trace-context.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { CALLER_TRACE_PARENT, TurnSpanLog } from '../support/turn-span-log.js';

const OTHER_TRACE_PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const text = (t: string) => [{ type: 'text' as const, text: t }];

/**
 * Issue 27: a turn's trace context is stored with its row — as it begins, or as it is queued — and
 * read back; the turn's span starts with it. A turn started without one gets a synthetic root, stored the same way.
 */
describe.each(durableTargets)('a turn\'s trace context in storage on $name', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  let runtime: Runtime | undefined;
  afterEach(async () => {
    await runtime?.shutdown();
    await db?.drop();
    runtime = db = undefined;
  });

  it.skipIf(skip)('a turn begun with a traceparent stores it; one begun without stores the root it was given', async () => {
    db = create();
    const storage = db.open();
    runtime = await createRuntime({ storage, model: scriptedModel([{ text: 'one' }, { text: 'two' }]) });
    const spans = new TurnSpanLog(runtime);
    const session = await runtime.createSession();

    const traced = await session.startTurn({ clientRequestId: 'traced', input: text('hi'), traceParent: CALLER_TRACE_PARENT });
    if (!traced.ok) throw new Error(JSON.stringify(traced.error));
    expect(await session.waitForTurn(traced.turnId)).toMatchObject({ status: 'completed' });
    expect((await spans.started(`turn:${traced.turnId}`)).traceParent).toBe(CALLER_TRACE_PARENT);
    expect(await storage.getTurn(traced.turnId)).toMatchObject({ status: 'completed', traceParent: CALLER_TRACE_PARENT });

    const untraced = await session.startTurn({ clientRequestId: 'untraced', input: text('again') });
    if (!untraced.ok) throw new Error(JSON.stringify(untraced.error));
    expect(await session.waitForTurn(untraced.turnId)).toMatchObject({ status: 'completed' });
    const root = (await spans.started(`turn:${untraced.turnId}`)).traceParent;
    expect(traceParentSchema.safeParse(root).success).toBe(true);
    expect(root).not.toBe(CALLER_TRACE_PARENT);
    expect((await storage.getTurn(untraced.turnId))?.traceParent).toBe(root);
    expect((await storage.listTurns(session.id)).map((t) => t.traceParent)).toEqual([CALLER_TRACE_PARENT, root]);
    spans.close();
  });

  it.skipIf(skip)('a queued turn stores its traceparent with its queued row, and starts with it', async () => {
    db = create();
    const storage = db.open();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let calling!: () => void;
    const called = new Promise<void>((resolve) => (calling = resolve));
    const model = scriptedModel([
      async () => {
        calling();
        await held;
        return { text: 'first' };
      },
      { text: 'second' },
    ]);
    runtime = await createRuntime({ storage, model });
    const spans = new TurnSpanLog(runtime);
    const session = await runtime.createSession({ busyPolicy: 'enqueue' });
    const first = await session.submitTurn({ clientRequestId: 'first', input: text('first'), traceParent: CALLER_TRACE_PARENT });
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    await called;

    const second = await session.submitTurn({ clientRequestId: 'second', input: text('second'), traceParent: OTHER_TRACE_PARENT });
    expect(second).toMatchObject({ ok: true, status: 'queued' });
    if (!second.ok) return;
    // The queued row holds it before the turn runs: another host starting the queue would read it there.
    expect((await storage.listQueuedTurns(session.id)).map((q) => [q.id, q.traceParent])).toEqual([[second.turnId, OTHER_TRACE_PARENT]]);
    expect((await storage.getTurn(second.turnId))?.traceParent).toBe(OTHER_TRACE_PARENT);

    release();
    expect(await session.waitForTurn(second.turnId)).toMatchObject({ status: 'completed', finalText: 'second' });
    expect((await spans.started(`turn:${first.turnId}`)).traceParent).toBe(CALLER_TRACE_PARENT);
    expect((await spans.started(`turn:${second.turnId}`)).traceParent).toBe(OTHER_TRACE_PARENT);
    expect(await storage.getTurn(second.turnId)).toMatchObject({ status: 'completed', traceParent: OTHER_TRACE_PARENT });
    spans.close();
  });

  it.skipIf(skip)('a start-turn command with a malformed traceParent is refused as invalid input, and nothing is stored', async () => {
    db = create();
    const storage = db.open();
    runtime = await createRuntime({ storage, model: scriptedModel([]) });
    const session = await runtime.createSession();
    const refused = await session.startTurn({ clientRequestId: 'bad', input: text('hi'), traceParent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01' });
    expect(refused).toMatchObject({ ok: false, error: { code: 'InvalidInput' } });
    expect(await storage.listTurns(session.id)).toEqual([]);
  });
});
