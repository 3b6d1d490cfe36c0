import { afterEach, describe, expect, it } from 'vitest';
import type { RequestMessage, StoredMessage } from '../../../src/index.js';
import { failingTool, harness, readFileTool, runTurn, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

function toolMessages(request: { messages: RequestMessage[] }) {
  return request.messages.filter((m): m is Extract<RequestMessage, { role: 'tool' }> => m.role === 'tool');
}

async function stored(hh: Harness): Promise<StoredMessage[]> {
  return hh.storage.listMessages(hh.session.id);
}

describe('the agent loop (000 §4, §12)', () => {
  it('completes after one model call when the model asks for no tool', async () => {
    h = await harness([{ text: 'hello there' }]);
    const { outcome } = await runTurn(h.session, 'hi');
    expect(outcome).toEqual({ status: 'completed', finalText: 'hello there' });
    expect(h.model.requests).toHaveLength(1);
    expect(h.model.remaining).toBe(0);
    const messages = await stored(h);
    // The user message, the first world-state sample (the sandbox policy), the answer.
    expect(messages.map((m) => [m.message.role, m.message.role === 'user' ? m.message.kind : ''])).toEqual([
      ['user', 'normal'],
      ['user', 'world_state'],
      ['assistant', ''],
    ]);
  });

  it('puts a tool result into the next model request', async () => {
    h = await harness([{ text: 'looking', toolCalls: [{ name: 'read_file', args: { path: 'a.txt' } }] }, { text: 'done' }]);
    const { outcome } = await runTurn(h.session, 'read a.txt');
    expect(outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect(h.model.requests).toHaveLength(2);
    const second = h.model.requests[1]!;
    const tail = second.messages.slice(-2);
    expect(tail[0]).toMatchObject({ role: 'assistant', text: 'looking' });
    expect(tail[1]).toMatchObject({ role: 'tool', toolName: 'read_file', status: 'success', content: 'contents of a.txt' });
  });

  it('keeps provider order for several results, in the next request and in storage', async () => {
    h = await harness([
      {
        text: 'three reads',
        toolCalls: [
          { id: 'c-1', name: 'read_file', args: { path: '1' } },
          { id: 'c-2', name: 'read_file', args: { path: '2' } },
          { id: 'c-3', name: 'read_file', args: { path: '3' } },
        ],
      },
      { text: 'done' },
    ]);
    await runTurn(h.session, 'go');
    expect(toolMessages(h.model.requests[1]!).map((m) => m.toolCallId)).toEqual(['c-1', 'c-2', 'c-3']);
    const messages = await stored(h);
    const results = messages.filter((m) => m.message.role === 'tool');
    expect(results.map((m) => (m.message.role === 'tool' ? m.message.toolCallId : ''))).toEqual(['c-1', 'c-2', 'c-3']);
    // Sequences increase with write order: the database holds them in provider order too.
    expect(results.map((m) => m.sequence)).toEqual([...results.map((m) => m.sequence)].sort((a, b) => a - b));
    const writes = h.storage.calls.filter((c) => c.method === 'appendMessage').map((c) => (c.args[0] as StoredMessage).message.role);
    expect(writes).toEqual(['user', 'assistant', 'tool', 'tool', 'tool', 'assistant']);
  });

  it('returns an unknown tool as a ToolNotFound result and lets the model continue', async () => {
    h = await harness([{ text: 'try', toolCalls: [{ id: 'u1', name: 'no_such_tool', args: {} }] }, { text: 'ok, without it' }]);
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'ok, without it' });
    const [result] = toolMessages(h.model.requests[1]!);
    expect(result).toEqual({
      role: 'tool',
      toolCallId: 'u1',
      toolName: 'no_such_tool',
      status: 'error',
      content: "ToolNotFound: no tool named 'no_such_tool' is available",
    });
  });

  it('returns invalid arguments of an ordinary tool as an InvalidArguments result', async () => {
    const log: string[] = [];
    h = await harness(
      [
        {
          text: 'bad args',
          toolCalls: [
            { id: 'bad-shape', name: 'read_file', args: { path: 42 } },
            { id: 'not-json', name: 'read_file', argumentsText: '{"path": ' },
          ],
        },
        { text: 'recovered' },
      ],
      { tools: [readFileTool(log)] },
    );
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'recovered' });
    expect(log).toEqual([]);
    const results = toolMessages(h.model.requests[1]!);
    expect(results.map((r) => r.status)).toEqual(['error', 'error']);
    expect(results[0]!.content).toMatch(/^InvalidArguments: .*path/s);
    expect(results[1]!.content).toBe("InvalidArguments: the arguments of 'read_file' are not a JSON object (nested at most 64 deep)");
  });

  it('returns a tool error to the model and the error result is in the next request', async () => {
    h = await harness([{ text: 'try', toolCalls: [{ id: 'f1', name: 'flaky', args: {} }] }, { text: 'it failed, sorry' }], {
      tools: [failingTool()],
    });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'completed', finalText: 'it failed, sorry' });
    expect(toolMessages(h.model.requests[1]!)).toEqual([
      { role: 'tool', toolCallId: 'f1', toolName: 'flaky', status: 'error', content: 'tool error: disk on fire' },
    ]);
  });

  it('fails the turn with max_model_calls when the loop is exhausted', async () => {
    const steps = Array.from({ length: 5 }, (_, i) => ({ text: `step ${i}`, toolCalls: [{ name: 'read_file', args: { path: `f${i}` } }] }));
    h = await harness(steps, { agents: { default: { maxModelCalls: 3 } } });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'max_model_calls' });
    expect(h.model.requests).toHaveLength(3);
    const results = (await stored(h)).filter((m) => m.message.role === 'tool');
    expect(results).toHaveLength(3);
  });

  it('ends the turn as doom_loop on the third identical call and does not run it', async () => {
    const log: string[] = [];
    const same = { name: 'read_file', args: { path: 'x' } };
    h = await harness(
      [
        { text: '1', toolCalls: [same] },
        { text: '2', toolCalls: [{ name: 'read_file', args: { path: 'x' } }] },
        { text: '3', toolCalls: [{ id: 'third', name: 'read_file', argumentsText: '{ "path" : "x" }' }] },
        { text: 'never' },
      ],
      { tools: [readFileTool(log)] },
    );
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
    expect(log).toEqual(['read_file x', 'read_file x']);
    expect(h.model.requests).toHaveLength(3);
    const last = (await stored(h)).at(-1)!.message;
    expect(last).toMatchObject({ role: 'tool', toolCallId: 'third', status: 'failed', content: "doom loop detected for tool 'read_file'" });
  });

  it('counts arguments with different key order as the same call', async () => {
    const log: string[] = [];
    h = await harness(
      [
        { text: '1', toolCalls: [{ name: 'read_file', argumentsText: '{"path":"x","n":1}' }] },
        { text: '2', toolCalls: [{ name: 'read_file', argumentsText: '{"n":1,"path":"x"}' }] },
        { text: '3', toolCalls: [{ name: 'read_file', argumentsText: '{"path":"x","n":1}' }] },
      ],
      { tools: [readFileTool(log)] },
    );
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toMatchObject({ status: 'failed', code: 'doom_loop' });
    expect(log).toHaveLength(2);
  });

  it('treats a tool that returns cancelled as a cancelled turn', async () => {
    const { defineTool } = await import('../../../src/index.js');
    const { z } = await import('zod');
    const gaveUp = defineTool({
      name: 'give_up',
      description: 'returns cancelled',
      effect: 'read',
      input: z.object({}),
      execute: async () => ({ status: 'cancelled', content: 'the tool gave up' }),
    });
    h = await harness([{ text: 'x', toolCalls: [{ name: 'give_up', args: {} }, { id: 'after', name: 'read_file', args: { path: 'a' } }] }], {
      tools: [gaveUp, readFileTool()],
    });
    const { outcome } = await runTurn(h.session, 'go');
    expect(outcome).toEqual({ status: 'cancelled' });
    const last = (await stored(h)).at(-1)!.message;
    expect(last).toMatchObject({ toolCallId: 'after', status: 'cancelled', content: 'tool was not executed because the turn already terminated' });
  });
});
