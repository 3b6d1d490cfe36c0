import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type StoredMessage } from '../../../src/index.js';
import { MAILBOX_MAX_MESSAGES, MAILBOX_MAX_TOKENS, MODEL_TOOL_CALL_ID_MAX_CHARS } from '../../../src/protocol/input-limits.js';
import { harness, runTurn, type Harness } from '../../support/harness.js';

const results = (messages: StoredMessage[]) => messages.flatMap((m) => (m.message.role === 'tool' ? [{ status: m.message.status, content: m.message.content }] : []));

describe('upper bounds and time limits (issue 9, defect 7)', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.runtime.shutdown();
    h = undefined;
  });

  it('refuses agent messages past the mailbox bounds with MailboxFull, and a turn drains what was accepted', async () => {
    h = await harness([{ text: 'read them' }]);
    for (let i = 0; i < MAILBOX_MAX_MESSAGES; i++) expect(await h.session.deliverAgentMessage({ from: 'peer', text: `note ${i}` })).toEqual({ ok: true });
    expect(await h.session.deliverAgentMessage({ from: 'peer', text: 'one too many' })).toMatchObject({ ok: false, error: { code: 'MailboxFull', messages: MAILBOX_MAX_MESSAGES } });
    await runTurn(h.session, 'go');
    const drained = (await h.storage.listMessages(h.session.id)).filter((m) => m.message.role === 'user' && m.message.kind === 'agent_message');
    expect(drained).toHaveLength(MAILBOX_MAX_MESSAGES);
    // Drained: room again. Large messages hit the token bound before the count.
    const big = 'x'.repeat(15_000);
    let accepted = 0;
    for (;;) {
      const answer = await h.session.deliverAgentMessage({ from: 'peer', text: big });
      if (!answer.ok) {
        expect(answer.error).toMatchObject({ code: 'MailboxFull' });
        break;
      }
      accepted += 1;
    }
    expect(accepted).toBe(Math.floor(MAILBOX_MAX_TOKENS / Math.ceil((big.length + 2) / 4)));
  });

  it('fails a model response whose tool call id is absurdly long as model_protocol_error, running no tool', async () => {
    const ran: string[] = [];
    const tool = defineTool({ name: 'noop', description: 'records', effect: 'read', input: z.object({}), execute: () => (ran.push('ran'), { status: 'succeeded', content: 'ok' }) });
    h = await harness([{ text: 'x', toolCalls: [{ id: 'i'.repeat(MODEL_TOOL_CALL_ID_MAX_CHARS + 1), name: 'noop', args: {} }] }], { tools: [tool] });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'model_protocol_error', message: expect.stringContaining('tool call id') });
    expect(ran).toEqual([]);
  });

  it('fails a tool past its own timeoutMs, aborting its signal, and the turn goes on', async () => {
    let aborted = false;
    const slow = defineTool({
      name: 'slow',
      description: 'never finishes on its own',
      effect: 'read',
      input: z.object({}),
      timeoutMs: 30,
      execute: (_args, { signal }) =>
        new Promise((resolve) => signal.addEventListener('abort', () => {
          aborted = true;
          resolve({ status: 'cancelled', content: 'stopped' });
        })),
    });
    h = await harness([{ text: 'try', toolCalls: [{ name: 'slow', args: {} }] }, { text: 'it timed out, moving on' }], { tools: [slow], permissionMode: 'auto' });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'it timed out, moving on' });
    expect(aborted).toBe(true);
    expect(results(await h.storage.listMessages(h.session.id))).toEqual([{ status: 'failed', content: 'the tool timed out after 30 ms and was cancelled' }]);
  });

  it('applies the agent\'s toolTimeoutMs to a tool that ignores its signal, and still writes exactly one result', async () => {
    const stubborn = defineTool({ name: 'stubborn', description: 'ignores its signal', effect: 'read', input: z.object({}), execute: () => new Promise(() => undefined) });
    h = await harness([{ text: 'try', toolCalls: [{ name: 'stubborn', args: {} }, { name: 'read_file', args: { path: 'a' } }] }, { text: 'done' }], {
      tools: [stubborn, (await import('../../support/harness.js')).readFileTool()],
      agents: { default: { toolTimeoutMs: 20 } },
      permissionMode: 'auto',
    });
    expect((await runTurn(h.session, 'go')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(results(await h.storage.listMessages(h.session.id))).toEqual([
      { status: 'failed', content: 'the tool timed out after 20 ms and was cancelled' },
      { status: 'succeeded', content: 'contents of a' },
    ]);
  });

  it('refuses a workspaceDir beyond 4 096 characters, and a tool with a nonsense timeoutMs, with typed errors', async () => {
    h = await harness([]);
    await expect(h.runtime.createSession({ workspaceDir: `/${'d'.repeat(4_096)}` })).rejects.toMatchObject({ code: 'InvalidInput' });
    const bad = defineTool({ name: 'bad', description: 'x', effect: 'read', input: z.object({}), timeoutMs: -1, execute: () => ({ status: 'succeeded', content: '' }) });
    await expect(harness([], { tools: [bad] })).rejects.toMatchObject({ code: 'InvalidTool' });
  });
});
