import { describe, expect, it } from 'vitest';
import { createRuntime, scriptedModel, sqliteStorage } from '../../../src/index.js';
import { runTurn } from '../../support/harness.js';

describe('names looked up from user input are own properties only (issue 9, defect 2)', () => {
  it('refuses inherited agent names, so no session runs without an agent and its loop guards', async () => {
    const runtime = await createRuntime({ storage: sqliteStorage({ filename: ':memory:' }), model: scriptedModel([{ text: 'ok' }]) });
    try {
      for (const agent of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
        await expect(runtime.createSession({ agent })).rejects.toMatchObject({ code: 'UnknownAgent' });
      }
      const session = await runtime.createSession({ agent: 'default' });
      for (const id of ['constructor', '__proto__', 'toString']) {
        expect(await session.acceptedTurn(id)).toEqual({ ok: false, error: { code: 'NotAccepted' } });
      }
      expect((await runTurn(session, 'hi', 'constructor')).outcome).toEqual({ status: 'completed', finalText: 'ok' });
      const accepted = await session.acceptedTurn('constructor');
      expect(accepted).toMatchObject({ ok: true, turnId: expect.stringMatching(/^turn_/) });
    } finally {
      await runtime.shutdown();
    }
  });

  it('configures an agent named like an Object method without touching any other', async () => {
    const runtime = await createRuntime({
      storage: sqliteStorage({ filename: ':memory:' }),
      model: scriptedModel([{ text: 'ok' }]),
      agents: { toString: { systemPrompt: 'I am an agent with an odd name.', maxModelCalls: 2 } },
    });
    try {
      const session = await runtime.createSession({ agent: 'toString' });
      expect((await runTurn(session, 'hi')).outcome).toEqual({ status: 'completed', finalText: 'ok' });
      await expect(runtime.createSession({ agent: 'valueOf' })).rejects.toMatchObject({ code: 'UnknownAgent' });
    } finally {
      await runtime.shutdown();
    }
  });
});
