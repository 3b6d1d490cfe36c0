import { describe, expect, it } from 'vitest';
import { ChatState, ChatStateError, type ChatMessage, type StoredMessage } from '../../src/index.js';
import { compactedView } from '../../src/compaction/compacted-view.js';
import type { CompactionRow } from '../../storage/session-storage.js';

function stored(sequence: number, message: ChatMessage): StoredMessage {
  return { id: `msg-${sequence}`, sessionId: 's-1', turnId: 't-1', sequence, createdAtMs: 1_000 + sequence, message };
}

const user = (text: string): ChatMessage => ({ role: 'user', kind: 'normal', text });
const calls = (...ids: string[]): ChatMessage => ({
  role: 'assistant',
  text: '',
  reasoning: '',
  toolCalls: ids.map((id) => ({ id, name: 'read_file', argumentsText: '{}' })),
});
const result = (toolCallId: string): ChatMessage => ({ role: 'tool', toolCallId, toolName: 'read_file', status: 'succeeded', content: 'ok' });

function chatStateError(run: () => unknown): ChatStateError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ChatStateError);
    expect((error as ChatStateError).code).toBe('chat_state_error');
    return error as ChatStateError;
  }
  throw new Error('expected a ChatStateError');
}

function expectAligned(state: ChatState): void {
  const view = state.view();
  const conversation = state.conversation();
  expect(conversation).toHaveLength(view.length);
  view.forEach((item, i) => expect(conversation[i]).toBe(item.message));
}

describe('ChatState (CW-3)', () => {
  it('refuses a stored system message on load', () => {
    const system = stored(2, { role: 'system', text: 'obey' } as unknown as ChatMessage);
    const error = chatStateError(() => new ChatState([stored(1, user('hi')), system]));
    expect(error.reason).toBe('PersistedSystemMessage');
    expect(error.message).toContain('msg-2');
  });

  it('refuses a system message offered for append', () => {
    const state = new ChatState();
    expect(chatStateError(() => state.check({ role: 'system', text: 'x' } as unknown as ChatMessage)).reason).toBe('PersistedSystemMessage');
  });

  it('refuses a tool result with no open call', () => {
    const state = new ChatState([stored(1, user('hi'))]);
    expect(chatStateError(() => state.check(result('nope'))).reason).toBe('UnmatchedToolResult');
    expect(chatStateError(() => state.append(stored(2, result('nope')))).reason).toBe('UnmatchedToolResult');
    expect(state.view()).toHaveLength(1);
    expect(state.nextSequence).toBe(2);
  });

  it('refuses a tool-call id used twice within one message', () => {
    const state = new ChatState();
    expect(chatStateError(() => state.check(calls('c1', 'c2', 'c1'))).reason).toBe('DuplicateToolCallId');
    expect(() => state.check(calls('c1', 'c2'))).not.toThrow();
  });

  it('refuses a tool-call id already used by an earlier message, appended or loaded', () => {
    const state = new ChatState([stored(1, user('hi')), stored(2, calls('loaded')), stored(3, result('loaded'))]);
    expect(chatStateError(() => state.check(calls('loaded'))).reason).toBe('DuplicateToolCallId');
    state.append(stored(4, calls('c1')));
    state.append(stored(5, result('c1')));
    expect(chatStateError(() => state.check(calls('fresh', 'c1'))).reason).toBe('DuplicateToolCallId');
    expect(chatStateError(() => state.append(stored(6, calls('c1')))).reason).toBe('DuplicateToolCallId');
    expect(state.view()).toHaveLength(5);
  });

  it('closes a call once its result is appended: a second result is refused', () => {
    const state = new ChatState([stored(1, user('go'))]);
    state.append(stored(2, calls('c1', 'c2')));
    expect(() => state.check(result('c1'))).not.toThrow();
    state.append(stored(3, result('c1')));
    expect(chatStateError(() => state.check(result('c1'))).reason).toBe('UnmatchedToolResult');
    expect(() => state.check(result('c2'))).not.toThrow(); // still open
    state.append(stored(4, result('c2')));
    expect(chatStateError(() => state.append(stored(5, result('c2')))).reason).toBe('UnmatchedToolResult');
    expect(state.nextSequence).toBe(5);
  });

  it('shows real items with message id and sequence, and follows the highest sequence', () => {
    const state = new ChatState([stored(3, calls('c1')), stored(1, user('go')), stored(7, result('c1'))]);
    expect(state.nextSequence).toBe(8);
    expect(state.view().map((i) => i.provenance)).toEqual([
      { kind: 'real', messageId: 'msg-3', sequence: 3 },
      { kind: 'real', messageId: 'msg-1', sequence: 1 },
      { kind: 'real', messageId: 'msg-7', sequence: 7 },
    ]);
    expect(new ChatState().nextSequence).toBe(1);
  });

  it('builds a compacted conversation: synthetic items first, then only messages after the boundary', () => {
    const history = [
      stored(1, user('Fix the README.')),
      stored(2, calls('c1')),
      stored(3, result('c1')),
      stored(4, { role: 'assistant', text: 'done', reasoning: '', toolCalls: [] }),
      stored(5, user('Now the docs.')),
      stored(6, calls('c2')),
    ];
    const row: CompactionRow = {
      id: 'cmp-1',
      sessionId: 's-1',
      position: 1,
      boundaryMessageId: 'msg-4',
      boundarySequence: 4,
      summary: 'README fixed.',
      replayText: 'Fix the README.',
      createdAtMs: 10,
      rewoundAtMs: null,
    };
    const projection = compactedView(row, null);
    const state = new ChatState(history, projection, row.boundarySequence);
    const view = state.view();
    expect(view).toHaveLength(5);
    expect(view.slice(0, 3)).toEqual(projection);
    expect(view.slice(0, 3).map((i) => i.provenance)).toEqual([
      { kind: 'synthetic', compactionId: 'cmp-1', reason: 'last_user_request_replay' },
      { kind: 'synthetic', compactionId: 'cmp-1', reason: 'compaction_summary' },
      { kind: 'synthetic', compactionId: 'cmp-1', reason: 'system_reminder' },
    ]);
    expect(view.slice(3).map((i) => (i.provenance.kind === 'real' ? i.provenance.messageId : null))).toEqual(['msg-5', 'msg-6']);
    expect(state.nextSequence).toBe(7);
    expectAligned(state);

    // Ids before the boundary stay used, and their calls are not open.
    expect(chatStateError(() => state.check(calls('c1'))).reason).toBe('DuplicateToolCallId');
    expect(chatStateError(() => state.check(result('c1'))).reason).toBe('UnmatchedToolResult');
    // The open call after the boundary takes its result.
    state.append(stored(7, result('c2')));
    expect(state.nextSequence).toBe(8);
    expectAligned(state);
  });

  it('keeps view() and conversation() aligned through appends', () => {
    const state = new ChatState([stored(1, user('go'))]);
    expectAligned(state);
    state.append(stored(2, calls('a', 'b')));
    state.append(stored(3, result('b')));
    state.append(stored(4, result('a')));
    state.append(stored(5, user('thanks')));
    expect(() => state.append(stored(6, result('a')))).toThrow(ChatStateError);
    expectAligned(state);
    expect(state.conversation().map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user']);
    expect(state.nextSequence).toBe(6);
  });
});
