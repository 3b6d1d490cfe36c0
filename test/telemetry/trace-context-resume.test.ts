import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, defineTool, scriptedModel, type Runtime, type SessionHandle } from '../../src/index.js';
import { traceParentSchema } from '../../src/protocol/trace-context.js';
import { durableTargets, type DurableDatabase } from '../support/databases.js';
import { crash } from '../support/harness.js';
import { CALLER_TRACE_PARENT, TurnSpanLog } from '../support/turn-span-log.js';

/** A tool that asks for an approval in `ask` mode, and runs at once once allowed. */
const deploy = defineTool({
  name: 'deploy',
  description: 'deploys',
  effect: 'write',
  input: z.object({}),
  execute: () => ({ status: 'succeeded', content: 'deployed' }),
});

/** Resolves once the session has announced an approval request (announced only once stored, issue 26). */
function approvalAsked(session: SessionHandle): Promise<void> {
  return new Promise((resolve) => {
    const subscription = session.updates$.subscribe(({ update }) => {
      if (update.type !== 'permission_requested') return;
      resolve();
      queueMicrotask(() => subscription.unsubscribe());
    });
  });
}

/**
 * Issue 27 with issue 26: a turn whose host went away goes on elsewhere as one trace. The turn waits
 * for an approval as its first runtime crashes, so the second opens its session only when asked — with
 * a span observer in place — and the resumed part's span starts with the traceparent stored with the turn.
 */
describe.each(durableTargets)('a turn that moves hosts stays one trace on $name', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const r of runtimes.splice(0)) await r.shutdown().catch(() => undefined);
    await db?.drop();
    db = undefined;
  });

  /** Starts a turn on a first runtime that crashes while the turn waits for its approval; the second runtime is up, the session not open there. */
  async function moveTurn(traceParent: string | undefined) {
    db = create();
    const first = await createRuntime({ storage: db.open(), resumeTurns: true, tools: [deploy], model: scriptedModel([{ text: 'deploying', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]) });
    runtimes.push(first);
    const firstSpans = new TurnSpanLog(first);
    const session = await first.createSession({ permissionMode: 'ask' });
    const asked = approvalAsked(session);
    const started = await session.startTurn({ clientRequestId: 'c-deploy', input: [{ type: 'text', text: 'deploy it' }], ...(traceParent && { traceParent }) });
    if (!started.ok) throw new Error(JSON.stringify(started.error));
    await asked;
    const firstFacts = await firstSpans.started(`turn:${started.turnId}`);

    crash(first);
    const storage = db.open();
    const second = await createRuntime({ storage, resumeTurns: true, tools: [deploy], model: scriptedModel([{ text: 'deployed it' }]) });
    runtimes.push(second);
    // A turn waiting only for a person is not opened by the startup: it is opened below, observed.
    expect(second.isOpen(session.id)).toBe(false);
    const secondSpans = new TurnSpanLog(second);
    const reopened = await second.openSession(session.id);
    const resumedFacts = await secondSpans.started(`turn:${started.turnId}:resumed`);
    expect(await reopened.resolvePermission({ turnId: started.turnId, toolCallId: 'dep-1', decision: 'allow_once' })).toEqual({ ok: true });
    expect(await reopened.waitForTurn(started.turnId)).toEqual({ status: 'completed', finalText: 'deployed it' });
    return { turnId: started.turnId, firstFacts, resumedFacts, storage };
  }

  it.skipIf(skip)("the resumed part is a child of the caller's span, as the first part was", async () => {
    const { turnId, firstFacts, resumedFacts, storage } = await moveTurn(CALLER_TRACE_PARENT);
    expect(firstFacts.traceParent).toBe(CALLER_TRACE_PARENT);
    expect(resumedFacts).toMatchObject({ traceParent: CALLER_TRACE_PARENT, resumeReason: 'reopened' });
    expect((await storage.getTurn(turnId))?.traceParent).toBe(CALLER_TRACE_PARENT);
  });

  it.skipIf(skip)('a turn started without one keeps its synthetic root across the move', async () => {
    const { turnId, firstFacts, resumedFacts, storage } = await moveTurn(undefined);
    expect(traceParentSchema.safeParse(firstFacts.traceParent).success).toBe(true);
    expect(resumedFacts.traceParent).toBe(firstFacts.traceParent);
    expect((await storage.getTurn(turnId))?.traceParent).toBe(firstFacts.traceParent);
  });
});
