import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ChatState,
  ContextAssemblyError,
  INTERRUPTED_RESULT_TEXT,
  measureBudget,
  modelVisibleStatus,
  prepare,
  type ChatMessage,
  type ConversationItem,
  type ModelCapabilities,
  type PrepareSources,
  type PreparedModelCall,
  type RequestMessage,
  type StoredMessage,
  type ToolResultMessage,
} from '../../src/index.js';
import { conversationTokens } from '../../src/context/budget.js';
import { projectToolResult } from '../../src/context/projection.js';
import { pruneMessage } from '../../src/context/prune.js';

/**
 * `prepare` keeps the request copy of each conversation array and extends it by what was appended
 * (request-copy.ts); its running byte total gives the conversation's token estimate. These tests
 * hold the kept copy to what building from scratch gives: the old whole-conversation algorithm,
 * written out here as the oracle, and a full recount of the tokens.
 */

const CAPS: ModelCapabilities = { contextWindow: 200_000, maxOutputTokens: 8_000, maxReasoningTokens: 0 };
const SYSTEM = [{ key: 'core/agent-system', content: 'You are a test agent.' }];
const TOOLS = [{ name: 'read_file', description: 'Read a file', inputSchema: { type: 'object' } }];
const PNG = { mediaType: 'image/png', base64: 'iVBORw0KGgo=' };
const SEED = 1414;

function sources(conversation: readonly ConversationItem[], watermark: number, dataBlocks = false): PrepareSources {
  return { system: SYSTEM, conversation, tools: TOOLS, capabilities: { ...CAPS, dataBlocks }, watermark };
}

/** The request messages and provenance as the whole-conversation pass built them before the copy was kept. */
function oracle(items: readonly ConversationItem[], watermark: number, dataBlocks: boolean): { messages: RequestMessage[]; provenance: string[] } {
  const copy = items.map(({ message, provenance }) => {
    const real = provenance.kind === 'real';
    const pruned = real && provenance.sequence < watermark ? pruneMessage(message) : message;
    return { message: pruned.role === 'tool' ? projectToolResult(pruned) : pruned, source: real ? provenance.messageId : 'synthetic' };
  });
  const results = new Map<string, { message: ToolResultMessage; source: string }>();
  for (const { message, source } of copy) if (message.role === 'tool' && !results.has(message.toolCallId)) results.set(message.toolCallId, { message, source });
  const messages: RequestMessage[] = [];
  const provenance: string[] = [];
  for (const { message, source } of copy) {
    if (message.role === 'user') {
      messages.push({ role: 'user', text: message.text });
      provenance.push(source);
    }
    if (message.role !== 'assistant') continue;
    const { text, reasoning, toolCalls, providerData } = message;
    messages.push(providerData ? { role: 'assistant', text, reasoning, toolCalls, providerData } : { role: 'assistant', text, reasoning, toolCalls });
    provenance.push(source);
    for (const call of toolCalls) {
      const result = results.get(call.id)?.message;
      const data = dataBlocks && result?.data?.length ? { data: result.data } : {};
      messages.push(
        result
          ? { role: 'tool', toolCallId: result.toolCallId, toolName: result.toolName, status: modelVisibleStatus(result.status), content: result.content, ...data }
          : { role: 'tool', toolCallId: call.id, toolName: call.name, status: 'interrupted', content: INTERRUPTED_RESULT_TEXT },
      );
      provenance.push(result ? results.get(call.id)!.source : 'synthetic');
    }
  }
  return { messages, provenance };
}

/** The kept copy's answer equals the oracle's, and its token count equals a full recount. */
function expectAsBuiltFromScratch(prepared: PreparedModelCall, items: readonly ConversationItem[], watermark: number, dataBlocks: boolean): void {
  const expected = oracle(items, watermark, dataBlocks);
  expect(JSON.stringify(prepared.request.messages)).toBe(JSON.stringify(expected.messages));
  expect(prepared.provenance).toEqual(expected.provenance);
  expect(prepared.budget.conversationTokens).toBe(conversationTokens(prepared.request.messages));
  expect(prepared.budget).toEqual(measureBudget(prepared.request));
  const fresh = prepare(sources([...items], watermark, dataBlocks));
  expect(JSON.stringify(fresh)).toBe(JSON.stringify(prepared));
}

// --- Random conversations: calls, results early, late, twice or never, long results, synthetic items.

const CALL_IDS = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'];

type Draw =
  | { kind: 'user'; text: string; synthetic: boolean }
  | { kind: 'assistant'; calls: string[] }
  | { kind: 'result'; id: string; size: 'short' | 'prunable' | 'oversized'; data: boolean };

const draw: fc.Arbitrary<Draw> = fc.oneof(
  fc.record({ kind: fc.constant('user' as const), text: fc.string({ maxLength: 6 }), synthetic: fc.boolean() }),
  fc.record({ kind: fc.constant('assistant' as const), calls: fc.uniqueArray(fc.constantFrom(...CALL_IDS), { maxLength: 3 }) }),
  fc.record({
    kind: fc.constant('result' as const),
    id: fc.constantFrom(...CALL_IDS, 'orphan'),
    size: fc.constantFrom('short' as const, 'short' as const, 'prunable' as const, 'oversized' as const),
    data: fc.boolean(),
  }),
);

const CONTENT = { short: 'ok', prunable: 'p'.repeat(9_000), oversized: 'é'.repeat(20_000) };

function toItems(draws: readonly Draw[]): ConversationItem[] {
  return draws.map((d, i): ConversationItem => {
    const sequence = i + 1;
    const provenance = { kind: 'real' as const, messageId: `m${sequence}`, sequence };
    if (d.kind === 'user') {
      const message: ChatMessage = { role: 'user', kind: 'normal', text: d.text };
      return d.synthetic ? { message, provenance: { kind: 'synthetic', compactionId: 'cmp', reason: 'system_reminder' } } : { message, provenance };
    }
    if (d.kind === 'assistant') {
      return { message: { role: 'assistant', text: `a${sequence}`, reasoning: '', toolCalls: d.calls.map((id) => ({ id, name: `tool_${id}`, argumentsText: '{}' })) }, provenance };
    }
    const message: ToolResultMessage = { role: 'tool', toolCallId: d.id, toolName: `tool_${d.id}`, status: 'succeeded', content: CONTENT[d.size], ...(d.data ? { data: [PNG] } : {}) };
    return { message, provenance };
  });
}

describe('the kept request copy (issue 14: prepare per step without rebuilding)', () => {
  it('equals building from scratch after every batch of appends, watermark move and model change', () => {
    const scenario = fc.record({
      draws: fc.array(draw, { maxLength: 24 }),
      /** Where the conversation is prepared while it grows, and the watermark at each of those calls. */
      stops: fc.array(fc.record({ at: fc.nat(24), watermark: fc.nat(26), dataBlocks: fc.boolean() }), { maxLength: 6 }),
    });
    fc.assert(
      fc.property(scenario, ({ draws, stops }) => {
        const all = toItems(draws);
        const conversation: ConversationItem[] = [];
        const calls = [...stops].sort((a, b) => a.at - b.at);
        calls.push({ at: all.length, watermark: calls.at(-1)?.watermark ?? 0, dataBlocks: calls.at(-1)?.dataBlocks ?? false });
        for (const { at, watermark, dataBlocks } of calls) {
          while (conversation.length < Math.min(at, all.length)) conversation.push(all[conversation.length]!);
          const prepared = prepare(sources(conversation, watermark, dataBlocks));
          expectAsBuiltFromScratch(prepared, conversation, watermark, dataBlocks);
          // Asked again with nothing appended, it answers the same.
          expect(JSON.stringify(prepare(sources(conversation, watermark, dataBlocks)))).toBe(JSON.stringify(prepared));
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('fills a call answered after it was prepared as interrupted, and moves the token count with it', () => {
    const conversation: ConversationItem[] = toItems([{ kind: 'user', text: 'go', synthetic: false }, { kind: 'assistant', calls: ['c1', 'c2'] }]);
    const before = prepare(sources(conversation, 0));
    expect(before.request.messages.slice(2).map((m) => m.role === 'tool' && m.status)).toEqual(['interrupted', 'interrupted']);
    conversation.push(...toItems([{ kind: 'user', text: 'go', synthetic: false }, { kind: 'assistant', calls: ['c1', 'c2'] }, { kind: 'result', id: 'c2', size: 'prunable', data: false }]).slice(2));
    const after = prepare(sources(conversation, 0));
    expect(after.request.messages.slice(2).map((m) => m.role === 'tool' && m.status)).toEqual(['interrupted', 'success']);
    expect(after.provenance).toEqual(['m1', 'm2', 'synthetic', 'm3']);
    expect(after.budget.conversationTokens).toBeGreaterThan(before.budget.conversationTokens);
    expectAsBuiltFromScratch(after, conversation, 0, false);
    // The first call's answer is its own: later appends do not change arrays already handed out.
    expect(before.request.messages).toHaveLength(4);
    expect(before.request.messages[3]).toMatchObject({ status: 'interrupted' });
  });

  it('notices an item replaced or removed in a plain array and builds again', () => {
    const items = toItems([
      { kind: 'user', text: 'one', synthetic: false },
      { kind: 'assistant', calls: ['c1'] },
      { kind: 'result', id: 'c1', size: 'short', data: false },
      { kind: 'user', text: 'two', synthetic: false },
    ]);
    const conversation = [...items];
    prepare(sources(conversation, 0));
    conversation[0] = { ...items[0]!, message: { role: 'user', kind: 'normal', text: 'replaced' } };
    const replaced = prepare(sources(conversation, 0));
    expect(replaced.request.messages[0]).toEqual({ role: 'user', text: 'replaced' });
    expectAsBuiltFromScratch(replaced, conversation, 0, false);
    conversation.splice(1, 2);
    const removed = prepare(sources(conversation, 0));
    expect(removed.request.messages.map((m) => m.role)).toEqual(['user', 'user']);
    expectAsBuiltFromScratch(removed, conversation, 0, false);
  });

  it('refuses an appended system message and stays correct for the items before it', () => {
    const conversation = toItems([{ kind: 'user', text: 'one', synthetic: false }, { kind: 'assistant', calls: ['c1'] }]);
    const before = prepare(sources(conversation, 0));
    conversation.push({ message: { role: 'system', text: 'obey' } as unknown as ChatMessage, provenance: { kind: 'real', messageId: 'm3', sequence: 3 } });
    expect(() => prepare(sources(conversation, 0))).toThrow(ContextAssemblyError);
    expect(() => prepare(sources(conversation, 0))).toThrow(ContextAssemblyError);
    conversation.pop();
    expect(JSON.stringify(prepare(sources(conversation, 0)))).toBe(JSON.stringify(before));
  });
});

describe('the kept copy of a chat state (appends, pruning, compaction)', () => {
  function stored(sequence: number, message: ChatMessage): StoredMessage {
    return { id: `msg-${sequence}`, sessionId: 's-1', turnId: 't-1', sequence, createdAtMs: sequence, message };
  }

  it('counts tokens as a full recount does after appends, a watermark move and a compaction', () => {
    const history: StoredMessage[] = [];
    const chat = new ChatState();
    const append = (message: ChatMessage) => {
      const next = stored(chat.nextSequence, message);
      history.push(next);
      chat.append(next);
    };
    const check = () => {
      const prepared = prepare(sources(chat.view(), chat.watermark));
      expectAsBuiltFromScratch(prepared, chat.view(), chat.watermark, false);
      return prepared;
    };
    for (let turn = 0; turn < 6; turn++) {
      append({ role: 'user', kind: 'normal', text: `turn ${turn}` });
      check();
      append({ role: 'assistant', text: '', reasoning: '', toolCalls: [{ id: `call-${turn}`, name: 'read_file', argumentsText: '{}' }] });
      check(); // the call's result is not stored yet: interrupted in this copy
      append({ role: 'tool', toolCallId: `call-${turn}`, toolName: 'read_file', status: 'succeeded', content: 'x'.repeat(turn % 2 === 0 ? 10_000 : 10) });
      check();
      if (turn === 3) {
        chat.watermark = chat.nextSequence; // prunes the long results of turns 0 and 2
        const pruned = check();
        expect(JSON.stringify(pruned.request.messages)).toContain('characters of this earlier tool result were pruned');
      }
    }
    // A compaction replaces the chat state: its new array is built from scratch once, then extended.
    const compacted = new ChatState(history, [{ message: { role: 'user', kind: 'normal', text: 'summary' }, provenance: { kind: 'synthetic', compactionId: 'cmp-1', reason: 'compaction_summary' } }], 9);
    compacted.watermark = chat.watermark;
    const first = prepare(sources(compacted.view(), compacted.watermark));
    expectAsBuiltFromScratch(first, compacted.view(), compacted.watermark, false);
    compacted.append(stored(compacted.nextSequence, { role: 'user', kind: 'normal', text: 'after' }));
    expectAsBuiltFromScratch(prepare(sources(compacted.view(), compacted.watermark)), compacted.view(), compacted.watermark, false);
  });
});
