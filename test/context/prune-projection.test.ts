import { describe, expect, it } from 'vitest';
import { prepare, type ChatMessage, type ConversationItem, type DataBlock, type ModelCapabilities, type ToolResultMessage } from '../../src/index.js';
import { PRUNE_THRESHOLD_CHARS, pruneMessage, pruneText } from '../../src/context/prune.js';
import { ITEM_TOKEN_LIMIT, projectToolResult } from '../../src/context/projection.js';
import { estimateTokens } from '../../src/protocol/token-estimate.js';

const CAPS: ModelCapabilities = { contextWindow: 1_000_000, maxOutputTokens: 8_000, maxReasoningTokens: 0, dataBlocks: true };
const PNG: DataBlock = { mediaType: 'image/png', base64: 'iVBORw0KGgo=' };

/** Text whose slices are recognisable: a run of increasing numbers, so no 20-character slice repeats. */
function patterned(length: number): string {
  let out = '';
  for (let i = 0; out.length < length; i++) out += `${i};`;
  return out.slice(0, length);
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

function toolResult(toolCallId: string, content: string, extra: Partial<ToolResultMessage> = {}): ToolResultMessage {
  return { role: 'tool', toolCallId, toolName: 'run', status: 'succeeded', content, ...extra };
}

function real(message: ChatMessage, sequence: number): ConversationItem {
  return { message, provenance: { kind: 'real', messageId: `msg-${sequence}`, sequence } };
}

/** An assistant message at `sequence` calling `call-<sequence>`, then its result at `sequence + 1`. */
function exchange(sequence: number, result: ToolResultMessage): ConversationItem[] {
  const id = result.toolCallId;
  return [real({ role: 'assistant', text: '', reasoning: '', toolCalls: [{ id, name: 'run', argumentsText: '{}' }] }, sequence), real(result, sequence + 1)];
}

function requestContent(conversation: ConversationItem[], watermark: number, toolCallId: string): { content: string; data?: DataBlock[] } {
  const { request } = prepare({ system: [{ key: 'core/agent-system', content: 'p' }], conversation, tools: [], capabilities: CAPS, watermark });
  const message = request.messages.find((m) => m.role === 'tool' && m.toolCallId === toolCallId);
  if (message?.role !== 'tool') throw new Error(`no result for ${toolCallId}`);
  return message;
}

describe('pruneText / pruneMessage (CW-4)', () => {
  it('leaves text of at most 8 192 characters unchanged', () => {
    expect(PRUNE_THRESHOLD_CHARS).toBe(8_192);
    const text = patterned(8_192);
    expect(pruneText(text)).toBe(text);
    expect(pruneText('')).toBe('');
  });

  it('keeps the first 4 096 and last 1 024 characters with a marker counting what went', () => {
    const text = patterned(8_193);
    expect(pruneText(text)).toBe(
      `${text.slice(0, 4_096)}\n[… 3073 characters of this earlier tool result were pruned …]\n${text.slice(8_193 - 1_024)}`,
    );
    const long = 'H'.repeat(4_096) + 'M'.repeat(50_000) + 'T'.repeat(1_024);
    const pruned = pruneText(long);
    expect(pruned.startsWith('H'.repeat(4_096) + '\n')).toBe(true);
    expect(pruned.endsWith('\n' + 'T'.repeat(1_024))).toBe(true);
    expect(pruned).not.toContain('M');
    expect(pruned).toContain('50000 characters');
  });

  it('returns the same object for a short tool result and for any non-tool message', () => {
    const short = toolResult('c', patterned(8_192));
    expect(pruneMessage(short)).toBe(short);
    const longUser: ChatMessage = { role: 'user', kind: 'normal', text: patterned(20_000) };
    expect(pruneMessage(longUser)).toBe(longUser);
    const longAssistant: ChatMessage = { role: 'assistant', text: patterned(20_000), reasoning: '', toolCalls: [] };
    expect(pruneMessage(longAssistant)).toBe(longAssistant);
  });

  it('prunes a long tool result into a new object, leaving the original and other fields alone', () => {
    const content = patterned(10_000);
    const original = toolResult('c', content, { status: 'failed', data: [PNG] });
    const pruned = pruneMessage(original);
    expect(pruned).not.toBe(original);
    expect(pruned).toEqual({ ...original, content: pruneText(content) });
    expect(original.content).toBe(content);
  });
});

describe('pruning through prepare (the watermark)', () => {
  it('prunes a long tool result stored below the watermark and leaves ones at or above it untouched', () => {
    const content = patterned(20_000); // 5 000+ tokens: under the projection limit, so only pruning can change it
    const conversation = [
      ...exchange(1, toolResult('below', content)),
      ...exchange(10, toolResult('at', content)), // result at sequence 11
      ...exchange(20, toolResult('above', content)),
    ];
    expect(requestContent(conversation, 3, 'below').content).toBe(pruneText(content));
    expect(requestContent(conversation, 11, 'at').content).toBe(content);
    expect(requestContent(conversation, 11, 'above').content).toBe(content);
    expect(requestContent(conversation, 11, 'below').content).toBe(pruneText(content));
    expect(requestContent(conversation, 12, 'at').content).toBe(pruneText(content));
    // A watermark of 0 prunes nothing.
    for (const id of ['below', 'at', 'above']) expect(requestContent(conversation, 0, id).content).toBe(content);
  });

  it('never prunes a short result below the watermark', () => {
    const content = patterned(8_192);
    expect(requestContent(exchange(1, toolResult('c', content)), 100, 'c').content).toBe(content);
  });
});

describe('projectToolResult (CW-4)', () => {
  it('returns the same object for a result estimated at most 8 000 tokens', () => {
    expect(ITEM_TOKEN_LIMIT).toBe(8_000);
    const small = toolResult('c', patterned(1_000), { data: [PNG] });
    expect(projectToolResult(small)).toBe(small);
    const base = jsonBytes(toolResult('c', '', { data: [PNG] }));
    const atLimit = toolResult('c', 'a'.repeat(32_000 - base), { data: [PNG] });
    expect(estimateTokens(atLimit)).toBe(8_000);
    expect(projectToolResult(atLimit)).toBe(atLimit);
  });

  it('drops the data blocks of a result just over the limit', () => {
    const base = jsonBytes(toolResult('c', '', { data: [PNG] }));
    const over = toolResult('c', 'a'.repeat(32_001 - base), { data: [PNG] });
    expect(estimateTokens(over)).toBe(8_001);
    const projected = projectToolResult(over);
    expect('data' in projected).toBe(false);
    expect(projected.content).toBe(over.content); // it already fits in 32 000 characters
    expect(over.data).toEqual([PNG]);
  });

  it('drops the data blocks when they alone take the result over the limit', () => {
    const big: DataBlock = { mediaType: 'image/png', base64: 'A'.repeat(40_000) };
    const projected = projectToolResult(toolResult('c', 'a screenshot', { data: [big] }));
    expect(projected).toEqual({ role: 'tool', toolCallId: 'c', toolName: 'run', status: 'succeeded', content: 'a screenshot' });
  });

  it('keeps the first 24 000 and last 8 000 characters with a truncation marker', () => {
    const content = patterned(50_000);
    const message = toolResult('c', content, { status: 'failed', data: [PNG] });
    const projected = projectToolResult(message);
    expect(projected).toEqual({
      role: 'tool',
      toolCallId: 'c',
      toolName: 'run',
      status: 'failed',
      content: `${content.slice(0, 24_000)}\n[… 18000 characters truncated to fit the context window …]\n${content.slice(42_000)}`,
    });
    expect(projected.content.slice(0, 24_000)).toBe(content.slice(0, 24_000));
    expect(projected.content.slice(-8_000)).toBe(content.slice(-8_000));
    expect(projected.content).not.toContain(content.slice(24_000, 24_050));
    expect(message.content).toBe(content);
  });

  it('projects regardless of the watermark, and only after pruning', () => {
    const content = patterned(50_000);
    const projected = projectToolResult(toolResult('c', content)).content;
    const conversation = exchange(5, toolResult('c', content, { data: [PNG] }));
    // At or above the watermark nothing is pruned, but the item is still projected (and loses its data).
    for (const watermark of [0, 5, 6]) {
      expect(requestContent(conversation, watermark, 'c')).toEqual({
        role: 'tool',
        toolCallId: 'c',
        toolName: 'run',
        status: 'success',
        content: projected,
      });
    }
    // Below the watermark the pruned text is already small, so projection leaves it.
    const pruned = requestContent(conversation, 100, 'c');
    expect(pruned.content).toBe(pruneText(content));
    expect(pruned.data).toEqual([PNG]);
  });
});

describe('projection ignores the artifact and counts bytes', () => {
  it('an artifact never makes a result lose its data blocks', async () => {
    const { prepare } = await import('../../src/context/engine.js');
    const base = { role: 'tool' as const, toolCallId: 'c1', toolName: 'read_file', status: 'succeeded' as const, content: 'x'.repeat(100), data: [{ mediaType: 'image/png', base64: 'AAAA' }] };
    const run = (message: typeof base & { artifact?: unknown }) =>
      prepare({
        system: [{ key: 'core/agent-system', content: 'p' }],
        conversation: [
          { message: { role: 'assistant', text: '', reasoning: '', toolCalls: [{ id: 'c1', name: 'read_file', argumentsText: '{}' }] }, provenance: { kind: 'real', messageId: 'a', sequence: 1 } },
          { message, provenance: { kind: 'real', messageId: 't', sequence: 2 } },
        ],
        tools: [],
        capabilities: { contextWindow: 100_000, maxOutputTokens: 1_000, maxReasoningTokens: 0, dataBlocks: true },
        watermark: 0,
      });
    const without = run(base);
    const withArtifact = run({ ...base, artifact: { rows: 'y'.repeat(40_000) } });
    expect(JSON.stringify(withArtifact.request)).toBe(JSON.stringify(without.request));
    expect(withArtifact.budget).toEqual(without.budget);
    expect(withArtifact.request.messages[1]).toMatchObject({ data: base.data });
  });

  it('cuts a multi-byte result down to the item budget in bytes, at character boundaries', () => {
    const content = '漢'.repeat(20_000);
    const projected = projectToolResult({ role: 'tool', toolCallId: 'c', toolName: 't', status: 'succeeded', content });
    expect(projected.content).not.toContain('\uFFFD');
    const [head, tail] = projected.content.split(/\n\[… \d+ characters truncated to fit the context window …\]\n/);
    expect(Buffer.byteLength(head!, 'utf8')).toBeLessThanOrEqual(24_000);
    expect(Buffer.byteLength(head!, 'utf8')).toBeGreaterThan(24_000 - 3);
    expect(Buffer.byteLength(tail!, 'utf8')).toBeLessThanOrEqual(8_000);
    expect(head! + tail!).toBe('漢'.repeat(head!.length + tail!.length));
  });
});
