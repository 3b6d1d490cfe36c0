import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, defineTool, INTERRUPTED_RESULT_TEXT, scriptedModel, type Runtime } from '../../../src/index.js';
import { durableTargets, type DurableDatabase } from '../../support/databases.js';
import { crash, readFileTool, runTurn, startTurn, withoutWorldState } from '../../support/harness.js';

/** A tool whose side effect happens and which then never returns: the process "crashes" inside it. */
function hangingSideEffect(effects: string[]) {
  let started: () => void = () => undefined;
  const ran = new Promise<void>((r) => (started = r));
  const tool = defineTool({
    name: 'deploy',
    description: 'has a side effect, then hangs',
    effect: 'read',
    input: z.object({}),
    execute: () => {
      effects.push('deployed');
      started();
      return new Promise<never>(() => undefined);
    },
  });
  return { tool, ran };
}

describe.each(durableTargets)('restart correction on $name (RT-24, RT-25)', ({ skip, create }) => {
  let db: DurableDatabase | undefined;
  const runtimes: Runtime[] = [];
  afterEach(async () => {
    for (const r of runtimes.splice(0)) await r.shutdown().catch(() => undefined);
    await db?.drop();
  });

  it.skipIf(skip)('in a session that does not resume turns: marks the running turn interrupted and its spans outcome_unknown, never reschedules it, and synthesizes the missing result', async () => {
    db = create();
    const effects: string[] = [];
    const hanging = hangingSideEffect(effects);
    const first = await createRuntime({
      storage: db.open(),
      model: scriptedModel([{ text: 'deploying', toolCalls: [{ id: 'dep-1', name: 'deploy', args: {} }] }]),
      tools: [hanging.tool, readFileTool()],
      agents: { default: { systemPrompt: 'You deploy.' } },
      // Issue 26 made resuming the default; this is RT-24 as it stays for sessions created without it.
      resumeTurns: false,
    });
    runtimes.push(first);
    const session = await first.createSession({ permissionMode: 'auto' });
    const oldTurn = await startTurn(session, 'deploy it');
    await hanging.ran;
    await first.flushTrace();
    // The first process is never shut down: the next runtime starts on the same database, as after a crash.
    crash(first);

    const secondStorage = db.open();
    const model = scriptedModel([{ text: 'the deploy result was lost; I will not retry it' }]);
    const second = await createRuntime({ storage: secondStorage, model, tools: [hanging.tool, readFileTool()] });
    runtimes.push(second);
    expect(second.correction).toEqual({ interruptedTurns: 1, unknownSpans: 2 });

    const turn = await secondStorage.getTurn(oldTurn);
    expect(turn).toMatchObject({ status: 'interrupted', errorCode: 'process_restart' });
    const spans = await secondStorage.listSpans(session.id);
    expect(spans.map((s) => [s.kind, s.status, s.errorCode]).sort()).toEqual([
      ['model_call', 'succeeded', null],
      ['tool_call', 'outcome_unknown', 'process_restart'],
      ['turn', 'outcome_unknown', 'process_restart'],
    ]);

    const reopened = await second.openSession(session.id);
    expect(reopened.snapshot().runtime).toEqual({ kind: 'idle' });
    expect(model.requests).toHaveLength(0);
    expect(await reopened.waitForTurn(oldTurn)).toMatchObject({ status: 'failed', code: 'actor_stopped' });

    const { outcome } = await runTurn(reopened, 'what happened?');
    expect(outcome).toEqual({ status: 'completed', finalText: 'the deploy result was lost; I will not retry it' });
    expect(effects).toEqual(['deployed']);
    const request = model.requests[0]!;
    // The first turn's user message and sandbox-policy sample, its stored call, then this turn's user message
    // and the sandbox policy re-sent with a replacement notice (the baseline did not survive the restart).
    expect(request.messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool', 'user', 'user']);
    expect(request.messages[5]).toEqual({ role: 'user', text: expect.stringMatching(/^The following sandbox policy replaces all previously provided sandbox policy\.\n<sandbox_policy>/) });
    expect(request.messages[3]).toEqual({
      role: 'tool',
      toolCallId: 'dep-1',
      toolName: 'deploy',
      status: 'interrupted',
      content: INTERRUPTED_RESULT_TEXT,
    });
    // The synthesized result lives in the request copy only.
    const stored = await secondStorage.listMessages(session.id);
    expect(stored.filter((m) => m.message.role === 'tool')).toEqual([]);
  });

  it.skipIf(skip)('reopens a finished session with its conversation and accepted request ids', async () => {
    db = create();
    const first = await createRuntime({ storage: db.open(), model: scriptedModel([{ text: 'first answer' }]) });
    runtimes.push(first);
    const session = await first.createSession();
    const { turnId } = await runTurn(session, 'question one', 'req-1');
    await first.shutdown();

    const model = scriptedModel([{ text: 'second answer' }]);
    const second = await createRuntime({ storage: db.open(), model });
    runtimes.push(second);
    expect(second.correction).toEqual({ interruptedTurns: 0, unknownSpans: 0 });
    const reopened = await second.openSession(session.id);
    expect(await reopened.startTurn({ clientRequestId: 'req-1', input: [{ type: 'text', text: 'again' }] })).toEqual({ ok: true, turnId });
    expect(await reopened.waitForTurn(turnId)).toEqual({ status: 'completed', finalText: 'first answer' });
    await runTurn(reopened, 'question two', 'req-2');
    expect(withoutWorldState(model.requests[0]!.messages)).toEqual([
      { role: 'user', text: 'question one' },
      { role: 'assistant', text: 'first answer', reasoning: '', toolCalls: [] },
      { role: 'user', text: 'question two' },
    ]);
  });
});

describe('loading a stored conversation (CW-3)', () => {
  it('refuses a stored system message with a typed error and leaves the data as it was', async () => {
    const { sqliteFile } = await import('../../support/databases.js');
    const Database = (await import('better-sqlite3')).default;
    const db = sqliteFile();
    try {
      const first = await createRuntime({ storage: db.open(), model: scriptedModel([{ text: 'hi' }]) });
      const session = await first.createSession();
      const { turnId } = await runTurn(session, 'hello');
      await first.shutdown();
      const { file } = db;
      const raw = new Database(file);
      raw
        .prepare(`insert into messages (id, session_id, turn_id, sequence, role, kind, content, created_at_ms) values (?, ?, ?, ?, 'system', 'normal', ?, 0)`)
        .run('msg_system', session.id, turnId, 99, JSON.stringify({ role: 'system', text: 'legacy system prompt' }));
      raw.close();

      const storage = db.open();
      const second = await createRuntime({ storage, model: scriptedModel([]) });
      await expect(second.openSession(session.id)).rejects.toMatchObject({ code: 'PersistedSystemMessage' });
      expect((await storage.listMessages(session.id)).map((m) => m.id)).toContain('msg_system');
      await second.shutdown();
    } finally {
      await db.drop();
    }
  });
});
