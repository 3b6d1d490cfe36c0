import { afterEach, describe, expect, it } from 'vitest';
import type { AssistantMessage, ToolResultMessage } from '../../../src/index.js';
import { harness, runTurn, types, writeFileTool, type Harness } from '../../support/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.runtime.shutdown();
  h = undefined;
});

const read = (id: string, path: string) => ({ id, name: 'read_file', args: { path } });

async function stored(hh: Harness) {
  const messages = (await hh.storage.listMessages(hh.session.id)).map((m) => m.message);
  return {
    calls: messages.flatMap((m) => (m.role === 'assistant' ? (m as AssistantMessage).toolCalls : [])),
    results: messages.filter((m): m is ToolResultMessage => m.role === 'tool'),
  };
}

describe("tool-call ids are the runtime's (RT-15)", () => {
  it('runs a provider that reuses call_0 in every response, turn after turn (once chat_state_error)', async () => {
    h = await harness([
      { text: 'first', toolCalls: [read('call_0', 'a')] },
      { text: 'second', toolCalls: [read('call_0', 'b')] },
      { text: 'done' },
      { text: 'again', toolCalls: [read('call_0', 'c')] },
      { text: 'done too' },
    ]);
    expect((await runTurn(h.session, 'read a and b')).outcome).toEqual({ status: 'completed', finalText: 'done' });
    expect((await runTurn(h.session, 'read c')).outcome).toEqual({ status: 'completed', finalText: 'done too' });

    const { calls, results } = await stored(h);
    // The first use of an id keeps it; every later one gets the runtime's own, the provider's kept beside it.
    expect(calls[0]).toEqual({ id: 'call_0', name: 'read_file', argumentsText: '{"path":"a"}' });
    for (const call of calls.slice(1)) {
      expect(call.id).toMatch(/^call_[0-9a-f-]{36}$/);
      expect(call.providerId).toBe('call_0');
    }
    expect(new Set(calls.map((c) => c.id)).size).toBe(3);
    // Each result answers its own call, under the runtime's id.
    expect(results.map((r) => [r.toolCallId, r.content])).toEqual(calls.map((c, i) => [c.id, `contents of ${['a', 'b', 'c'][i]}`]));
    // Updates speak the runtime's ids too.
    const started = h.updates.flatMap((u) => (u.update.type === 'tool_call_started' ? [u.update.toolCallId] : []));
    expect(started).toEqual(calls.map((c) => c.id));
  });

  it('gives a repeated id within one response its own id, and an id a host could not route a fresh one', async () => {
    h = await harness([{ text: 'x', toolCalls: [read('dup', 'a'), read('dup', 'b'), read('', 'c'), read('n'.repeat(201), 'd')] }, { text: 'ok' }]);
    expect((await runTurn(h.session, 'go')).outcome).toMatchObject({ status: 'completed' });
    const { calls, results } = await stored(h);
    expect(calls.map((c) => c.providerId)).toEqual([undefined, 'dup', '', 'n'.repeat(201)]);
    expect(calls[0]!.id).toBe('dup');
    expect(new Set(calls.map((c) => c.id)).size).toBe(4);
    expect(results.map((r) => r.toolCallId)).toEqual(calls.map((c) => c.id));
  });

  it("approves a call by the runtime's id", async () => {
    h = await harness(
      [
        { text: 'one', toolCalls: [{ id: 'call_0', name: 'write_file', args: { path: 'a.txt', text: '1' } }] },
        { text: 'two', toolCalls: [{ id: 'call_0', name: 'write_file', args: { path: 'b.txt', text: '2' } }] },
        { text: 'done' },
      ],
      { tools: [writeFileTool()] },
    );
    const started = await h.session.startTurn({ clientRequestId: 'c', input: [{ type: 'text', text: 'write' }] });
    if (!started.ok) throw new Error('refused');
    const approvals: string[] = [];
    h.session.updates$.subscribe((u) => {
      if (u.update.type !== 'permission_requested') return;
      approvals.push(u.update.toolCallId);
      void h!.session.resolvePermission({ turnId: started.turnId, toolCallId: u.update.toolCallId, decision: 'allow_once' });
    });
    expect(await h.session.waitForTurn(started.turnId)).toMatchObject({ status: 'completed', finalText: 'done' });
    expect(approvals[0]).toBe('call_0');
    expect(approvals[1]).not.toBe('call_0');
    expect(types(h.updates).filter((t) => t === 'permission_resolved')).toHaveLength(2);
  });

  it('keeps the tool span of every session when two sessions adopt the same provider id (span ids are global)', async () => {
    h = await harness([
      { text: 'first', toolCalls: [read('call_0', 'a')] },
      { text: 'done' },
      { text: 'other', toolCalls: [read('call_0', 'b')] },
      { text: 'done too' },
    ]);
    await runTurn(h.session, 'read a');
    const second = await h.runtime.createSession({ agent: 'default', permissionMode: 'ask' });
    await runTurn(second, 'read b');
    await h.runtime.flushTrace();
    expect(h.runtime.droppedSignals).toBe(0);
    for (const id of [h.session.id, second.id]) {
      const tools = (await h.storage.listSpans(id)).filter((s) => s.kind === 'tool_call');
      expect(tools.map((s) => [s.name, s.status])).toEqual([['read_file', 'succeeded']]);
    }
    // Both sessions adopted the provider's id, as RT-15 allows within a session.
    expect((await stored(h)).calls.map((c) => c.id)).toEqual(['call_0']);
  });
});
