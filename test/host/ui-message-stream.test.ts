import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import { approvalId, parseApprovalId } from '../../src/host/approval-id.js';
import type { RecordedCall, RecordedResult, RecordedStep, TurnRecordsView } from '../../src/host/turn-records.js';
import { UiMessageTranslator, type RunningView } from '../../src/host/ui-message-stream.js';
import type { SessionUpdate, UpdateEnvelope } from '../../src/protocol/updates.js';

/** Storage as the translator sees it, filled by the test as the runtime would store. */
class Records implements TurnRecordsView {
  readonly stepList: RecordedStep[] = [];
  readonly results = new Map<string, RecordedResult>();
  steps() {
    return this.stepList;
  }
  call(id: string): RecordedCall | undefined {
    return this.stepList.flatMap((s) => s.calls).find((c) => c.id === id);
  }
  result(id: string) {
    return this.results.get(id);
  }
}

let sequence = 0;
const env = (update: SessionUpdate): UpdateEnvelope => ({ version: 7, sessionId: 's', turnId: 't1', sequence: ++sequence, occurredAtMs: 0, update });
const translate = (t: UiMessageTranslator, updates: SessionUpdate[]) => updates.flatMap((u) => t.next(env(u)));

/** What the AI SDK's client makes of the chunks. */
async function folded(chunks: UIMessageChunk[], message?: UIMessage): Promise<UIMessage> {
  let last: UIMessage | undefined;
  const stream = new ReadableStream<UIMessageChunk>({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk);
      c.close();
    },
  });
  for await (const m of readUIMessageStream({ stream, ...(message && { message }), terminateOnError: true })) last = m;
  return last!;
}

describe('update envelopes as UI message chunks', () => {
  it('streams reasoning and text as parts of a step, tool input once started, output once stored, and finishes', async () => {
    const records = new Records();
    const t = new UiMessageTranslator('t1', records);
    const chunks = [...t.start('t1'), ...translate(t, [{ type: 'turn_started', clientRequestId: 'u1' }, { type: 'phase_changed', phase: 'running_model' }, { type: 'reasoning_delta', text: 'hm' }, { type: 'text_delta', text: 'let ' }, { type: 'text_delta', text: 'me' }])];
    records.stepList.push({ text: 'let me', reasoning: 'hm', calls: [{ id: 'c1', name: 'read_file', input: { path: 'a' } }] });
    chunks.push(...translate(t, [{ type: 'draft_cleared' }, { type: 'phase_changed', phase: 'running_tools' }, { type: 'tool_call_started', toolCallId: 'c1', name: 'read_file', status: 'validating' }]));
    records.results.set('c1', { status: 'succeeded', content: 'hello' });
    chunks.push(...translate(t, [{ type: 'tool_call_finished', toolCallId: 'c1', status: 'succeeded' }, { type: 'phase_changed', phase: 'running_model' }, { type: 'text_delta', text: 'done' }, { type: 'draft_cleared' }, { type: 'turn_finished', outcome: { status: 'completed', finalText: 'done', finishReason: 'stop' } }]));

    expect(chunks).toEqual([
      { type: 'start', messageId: 't1' },
      { type: 'start-step' },
      { type: 'reasoning-start', id: 'reasoning_1' },
      { type: 'reasoning-delta', id: 'reasoning_1', delta: 'hm' },
      { type: 'reasoning-end', id: 'reasoning_1' },
      { type: 'text-start', id: 'text_2' },
      { type: 'text-delta', id: 'text_2', delta: 'let ' },
      { type: 'text-delta', id: 'text_2', delta: 'me' },
      { type: 'text-end', id: 'text_2' },
      { type: 'tool-input-available', toolCallId: 'c1', toolName: 'read_file', input: { path: 'a' } },
      { type: 'tool-output-available', toolCallId: 'c1', output: 'hello' },
      { type: 'finish-step' },
      { type: 'start-step' },
      { type: 'text-start', id: 'text_3' },
      { type: 'text-delta', id: 'text_3', delta: 'done' },
      { type: 'text-end', id: 'text_3' },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'stop' },
    ]);
    expect(t.ended).toBe(true);
    const message = await folded(chunks);
    expect(message.parts.map((p) => p.type)).toEqual(['step-start', 'reasoning', 'text', 'tool-read_file', 'step-start', 'text']);
  });

  it('ends the response at an approval request, and a continuation sends only what follows it', async () => {
    const records = new Records();
    records.stepList.push({ text: '', reasoning: '', calls: [{ id: 'c1', name: 'list_dir', input: {} }, { id: 'c2', name: 'write_file', input: { path: 'n' } }] });
    records.results.set('c1', { status: 'succeeded', content: 'a.txt' });
    const first = new UiMessageTranslator('t1', records);
    const asked = [...first.start('t1'), ...first.replay(null, null), ...translate(first, [{ type: 'tool_call_started', toolCallId: 'c2', name: 'write_file', status: 'validating' }, { type: 'permission_requested', toolCallId: 'c2', name: 'write_file', paths: ['n'] }])];
    expect(asked.slice(-3)).toEqual([{ type: 'tool-approval-request', approvalId: approvalId('t1', 'c2'), toolCallId: 'c2' }, { type: 'finish-step' }, { type: 'finish', finishReason: 'tool-calls' }]);
    expect(translate(first, [{ type: 'text_delta', text: 'ignored' }])).toEqual([]);
    const message = await folded(asked);
    expect(message.parts.filter((p) => 'toolCallId' in p).map((p) => (p as { state: string }).state)).toEqual(['output-available', 'approval-requested']);

    const next = new UiMessageTranslator('t1', records);
    next.continueAfter(['c2']);
    records.results.set('c2', { status: 'denied', content: 'the user denied the tool call' });
    const continued = [...next.start('t1'), ...translate(next, [{ type: 'permission_resolved', toolCallId: 'c2', decision: 'deny' }, { type: 'tool_call_finished', toolCallId: 'c2', status: 'denied' }, { type: 'turn_finished', outcome: { status: 'failed', code: 'permission_denied', message: 'denied' } }])];
    expect(continued).toEqual([{ type: 'start', messageId: 't1' }, { type: 'tool-output-denied', toolCallId: 'c2' }, { type: 'finish', finishReason: 'other' }]);
  });

  it('a failure is an error part then finish; a time limit too; a cancel is abort', () => {
    const ends = (outcome: Extract<SessionUpdate, { type: 'turn_finished' }>['outcome']) => {
      const t = new UiMessageTranslator('t1', new Records());
      return translate(t, [{ type: 'phase_changed', phase: 'running_model' }, { type: 'text_delta', text: 'par' }, { type: 'turn_finished', outcome }]).slice(3);
    };
    expect(ends({ status: 'failed', code: 'model_error', message: 'boom' })).toEqual([{ type: 'text-end', id: 'text_1' }, { type: 'finish-step' }, { type: 'error', errorText: 'model_error: boom' }, { type: 'finish', finishReason: 'error' }]);
    expect(ends({ status: 'timed_out', message: 'over 5 s' })).toEqual([{ type: 'text-end', id: 'text_1' }, { type: 'finish-step' }, { type: 'error', errorText: 'timed_out: over 5 s' }, { type: 'finish', finishReason: 'error' }]);
    expect(ends({ status: 'cancelled' })).toEqual([{ type: 'text-end', id: 'text_1' }, { type: 'finish-step' }, { type: 'abort', reason: 'cancelled' }]);
  });

  it('replays stored steps, then the draft under way left open for the live deltas that continue it', async () => {
    const records = new Records();
    records.stepList.push({ text: 'one', reasoning: '', calls: [{ id: 'c1', name: 'grep', input: { pattern: 'x' } }, { id: 'c9', name: 'grep', input: {} }] });
    records.results.set('c1', { status: 'failed', content: 'bad pattern' });
    const view: RunningView = { kind: 'running', turnId: 't1', clientRequestId: 'u1', phase: 'running_model', draftText: 'tw', draftReasoning: '', toolCalls: [{ toolCallId: 'c1', name: 'grep', status: 'failed' }], pendingApproval: null, plan: null };
    const t = new UiMessageTranslator('t1', records);
    const chunks = [...t.start('t1'), ...t.replay(view, null), ...translate(t, [{ type: 'text_delta', text: 'o' }, { type: 'turn_finished', outcome: { status: 'completed', finalText: 'two' } }])];
    const message = await folded(chunks);
    // c9 never started (the turn ended first): it still shows, with whatever result was stored (none here).
    expect(message.parts).toEqual([
      { type: 'step-start' },
      expect.objectContaining({ type: 'text', text: 'one', state: 'done' }),
      expect.objectContaining({ type: 'tool-grep', toolCallId: 'c1', state: 'output-error', errorText: 'bad pattern' }),
      { type: 'step-start' },
      expect.objectContaining({ type: 'text', text: 'two', state: 'done' }),
      expect.objectContaining({ type: 'tool-grep', toolCallId: 'c9', state: 'input-available' }),
    ]);
  });

  it('a call denied by a rule (no approval asked) is an output error, not a denial the user never gave', () => {
    const records = new Records();
    records.stepList.push({ text: '', reasoning: '', calls: [{ id: 'c1', name: 'write_file', input: {} }] });
    records.results.set('c1', { status: 'denied', content: 'read_only mode: writes are not allowed' });
    const t = new UiMessageTranslator('t1', records);
    expect(translate(t, [{ type: 'tool_call_finished', toolCallId: 'c1', status: 'denied' }]).slice(-1)).toEqual([{ type: 'tool-output-error', toolCallId: 'c1', errorText: 'read_only mode: writes are not allowed' }]);
  });

  it('approval ids name their turn and call, and nothing else parses', () => {
    expect(parseApprovalId(approvalId('turn_1', 'call:2/x'))).toEqual({ turnId: 'turn_1', toolCallId: 'call:2/x' });
    for (const junk of ['', 'apr_', 'apr_!!!', 'made-up', `apr_${Buffer.from('["a"]').toString('base64url')}`, `apr_${Buffer.from('["a","\\u0000"]').toString('base64url')}`]) {
      expect(parseApprovalId(junk)).toBeNull();
    }
  });
});
