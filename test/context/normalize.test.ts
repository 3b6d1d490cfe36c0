import { describe, expect, it } from 'vitest';
import {
  INTERRUPTED_RESULT_TEXT,
  modelVisibleStatus,
  prepare,
  type AssistantMessage,
  type ChatMessage,
  type ConversationItem,
  type DataBlock,
  type ToolResultMessage,
  type ToolResultStatus,
} from '../../src/index.js';
import { normalizeConversation, type SourcedMessage } from '../../src/context/normalize.js';

const PNG: DataBlock = { mediaType: 'image/png', base64: 'iVBORw0KGgo=' };

function assistant(text: string, ...ids: string[]): AssistantMessage {
  return { role: 'assistant', text, reasoning: '', toolCalls: ids.map((id) => ({ id, name: `tool_${id}`, argumentsText: `{"id":"${id}"}` })) };
}

function result(toolCallId: string, content = `result of ${toolCallId}`, status: ToolResultStatus = 'succeeded', data?: DataBlock[]): ToolResultMessage {
  return { role: 'tool', toolCallId, toolName: `tool_${toolCallId}`, status, content, ...(data ? { data } : {}) };
}

const user = (text: string): ChatMessage => ({ role: 'user', kind: 'normal', text });

/** Sources named after their position: `s0`, `s1`, … */
function sourced(...messages: ChatMessage[]): SourcedMessage[] {
  return messages.map((message, i) => ({ message, source: `s${i}` }));
}

const NO_DATA = { dataBlocks: false };

/** A compact trace of the normalized conversation: `role:text-or-call-id`. */
function shape(messages: ReturnType<typeof normalizeConversation>['messages']): string[] {
  return messages.map((m) => (m.role === 'tool' ? `tool:${m.toolCallId}` : `${m.role}:${m.text}`));
}

describe('normalizeConversation (CW-4, RT-25)', () => {
  it('places results directly after their assistant message in call order, wherever they were stored', () => {
    const { messages, provenance } = normalizeConversation(
      sourced(user('go'), assistant('calling', 'c1', 'c2', 'c3'), result('c3'), user('meanwhile'), result('c1'), assistant('later'), result('c2')),
      NO_DATA,
    );
    expect(shape(messages)).toEqual(['user:go', 'assistant:calling', 'tool:c1', 'tool:c2', 'tool:c3', 'user:meanwhile', 'assistant:later']);
    expect(provenance).toEqual(['s0', 's1', 's4', 's6', 's2', 's3', 's5']);
    expect(messages[2]).toEqual({ role: 'tool', toolCallId: 'c1', toolName: 'tool_c1', status: 'success', content: 'result of c1' });
  });

  it('keeps the first of duplicate results and drops orphans', () => {
    const { messages, provenance } = normalizeConversation(
      sourced(assistant('a', 'c1'), result('c1', 'first'), result('ghost'), result('c1', 'second'), user('next'), result('other-ghost')),
      NO_DATA,
    );
    expect(shape(messages)).toEqual(['assistant:a', 'tool:c1', 'user:next']);
    expect(messages[1]).toMatchObject({ content: 'first' });
    expect(provenance).toEqual(['s0', 's1', 's4']);
  });

  it('synthesizes an interrupted result with the fixed text for each call that has none, in call order', () => {
    expect(INTERRUPTED_RESULT_TEXT).toBe('Tool result unavailable: the previous turn ended before a durable result was recorded.');
    const { messages, provenance } = normalizeConversation(sourced(assistant('a', 'c1', 'c2', 'c3'), result('c2'), user('after')), NO_DATA);
    expect(messages).toEqual([
      { role: 'assistant', text: 'a', reasoning: '', toolCalls: assistant('a', 'c1', 'c2', 'c3').toolCalls },
      {
        role: 'tool',
        toolCallId: 'c1',
        toolName: 'tool_c1',
        status: 'interrupted',
        content: 'Tool result unavailable: the previous turn ended before a durable result was recorded.',
      },
      { role: 'tool', toolCallId: 'c2', toolName: 'tool_c2', status: 'success', content: 'result of c2' },
      {
        role: 'tool',
        toolCallId: 'c3',
        toolName: 'tool_c3',
        status: 'interrupted',
        content: 'Tool result unavailable: the previous turn ended before a durable result was recorded.',
      },
      { role: 'user', text: 'after' },
    ]);
    expect(provenance).toEqual(['s0', 'synthetic', 's1', 'synthetic', 's2']);
  });

  it('gives identical JSON when the same history is normalized twice, and leaves the history alone', () => {
    const history = sourced(user('go'), assistant('a', 'c1', 'c2'), result('c2', 'two', 'failed', [PNG]), result('c2', 'dup'), result('zzz'));
    const before = structuredClone(history);
    const first = JSON.stringify(normalizeConversation(history, { dataBlocks: true }));
    expect(JSON.stringify(normalizeConversation(history, { dataBlocks: true }))).toBe(first);
    expect(JSON.stringify(normalizeConversation(structuredClone(before), { dataBlocks: true }))).toBe(first);
    expect(history).toEqual(before);
  });

  it('maps stored statuses to what the model sees (RT-17)', () => {
    const cases: [ToolResultStatus, string][] = [
      ['succeeded', 'success'],
      ['failed', 'error'],
      ['outcome_unknown', 'error'],
      ['denied', 'denied'],
      ['cancelled', 'interrupted'],
    ];
    const ids = cases.map((_, i) => `c${i}`);
    const { messages } = normalizeConversation(sourced(assistant('a', ...ids), ...cases.map(([status], i) => result(`c${i}`, 'x', status))), NO_DATA);
    expect(messages.slice(1).map((m) => (m.role === 'tool' ? m.status : m.role))).toEqual(cases.map(([, visible]) => visible));
    for (const [status, visible] of cases) expect(modelVisibleStatus(status)).toBe(visible);
  });

  it('keeps data blocks only for a model that takes them, and never adds an empty data key', () => {
    const history = sourced(assistant('a', 'c1', 'c2'), result('c1', 'img', 'succeeded', [PNG]), result('c2', 'none', 'succeeded', []));
    const withData = normalizeConversation(history, { dataBlocks: true }).messages;
    expect(withData[1]).toMatchObject({ toolCallId: 'c1', data: [PNG] });
    expect('data' in withData[2]!).toBe(false);
    const without = normalizeConversation(history, NO_DATA).messages;
    expect(without.some((m) => 'data' in m)).toBe(false);
  });

  it('renders every user kind as plain user text', () => {
    const { messages } = normalizeConversation(
      sourced({ role: 'user', kind: 'world_state', section: 'skills/catalog', text: 'catalog' }, { role: 'user', kind: 'agent_message', from: 'helper', text: 'hi' }),
      NO_DATA,
    );
    expect(messages).toEqual([
      { role: 'user', text: 'catalog' },
      { role: 'user', text: 'hi' },
    ]);
  });
});

describe('normalization through prepare', () => {
  it('repairs a stored history the same way and reports the stored ids', () => {
    const stored: ChatMessage[] = [user('go'), assistant('a', 'c1', 'c2'), result('c2'), result('c2', 'again'), result('orphan')];
    const conversation: ConversationItem[] = stored.map((message, i) => ({ message, provenance: { kind: 'real', messageId: `m${i}`, sequence: i + 1 } }));
    const sources = { system: [{ key: 'core/agent-system', content: 'p' }], conversation, tools: [], capabilities: { contextWindow: 100_000, maxOutputTokens: 1_000, maxReasoningTokens: 0 }, watermark: 0 };
    const { request, provenance } = prepare(sources);
    expect(shape(request.messages)).toEqual(['user:go', 'assistant:a', 'tool:c1', 'tool:c2']);
    expect(request.messages[2]).toMatchObject({ status: 'interrupted', content: INTERRUPTED_RESULT_TEXT });
    expect(provenance).toEqual(['m0', 'm1', 'synthetic', 'm2']);
    expect(JSON.stringify(prepare(sources).request)).toBe(JSON.stringify(request));
  });

  it("carries provider data and the provider's ids through unchanged, and only where they were (RT-15, RT-18)", () => {
    const withData: AssistantMessage = {
      role: 'assistant',
      text: 'a',
      reasoning: 'r',
      toolCalls: [{ id: 'call_x', providerId: 'call_0', name: 'tool_c1', argumentsText: '{}', providerMetadata: { google: { thoughtSignature: 's' } } }],
      providerData: { blocks: [{ type: 'reasoning', text: 'r', providerMetadata: { anthropic: { signature: 'sig' } } }, { type: 'tool_call', index: 0 }, { type: 'text', text: 'a' }] },
    };
    const stored: ChatMessage[] = [user('go'), withData, result('call_x'), assistant('plain')];
    const conversation: ConversationItem[] = stored.map((message, i) => ({ message, provenance: { kind: 'real', messageId: `m${i}`, sequence: i + 1 } }));
    const sources = { system: [{ key: 'core/agent-system', content: 'p' }], conversation, tools: [], capabilities: { contextWindow: 100_000, maxOutputTokens: 1_000, maxReasoningTokens: 0 }, watermark: 0 };
    const { request } = prepare(sources);
    expect(request.messages[1]).toEqual({ role: 'assistant', text: 'a', reasoning: 'r', toolCalls: withData.toolCalls, providerData: withData.providerData });
    // The stored objects themselves: nothing is rebuilt, so no byte can differ.
    expect((request.messages[1] as AssistantMessage).providerData).toBe(withData.providerData);
    expect(request.messages[3]).not.toHaveProperty('providerData');
    expect(JSON.stringify(prepare(structuredClone(sources)).request)).toBe(JSON.stringify(request));
  });
});
