import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ContextAssemblyError,
  ContextEngine,
  defineTool,
  INTERRUPTED_RESULT_TEXT,
  measureBudget,
  prepare,
  type ChatMessage,
  type ConversationItem,
  type DataBlock,
  type ModelCapabilities,
  type PrepareSources,
  type SystemPart,
  type ToolResultMessage,
} from '../../src/index.js';
import { systemContext } from '../../src/context/system-context.js';
import { compactedView } from '../../src/compaction/compacted-view.js';
import { Toolset } from '../../src/tools/toolset.js';
import type { CompactionRow } from '../../storage/session-storage.js';
import { SYSTEM_PART_TOKEN_LIMIT } from '../../src/protocol/item-limits.js';

const CAPS: ModelCapabilities = { contextWindow: 200_000, maxOutputTokens: 32_000, maxReasoningTokens: 0 };
const PNG: DataBlock = { mediaType: 'image/png', base64: 'iVBORw0KGgo=' };

function real(message: ChatMessage, sequence: number, messageId = `msg-${sequence}`): ConversationItem {
  return { message, provenance: { kind: 'real', messageId, sequence } };
}

function toolResult(toolCallId: string, content: string, extra: Partial<ToolResultMessage> = {}): ToolResultMessage {
  return { role: 'tool', toolCallId, toolName: 'read_file', status: 'succeeded', content, ...extra };
}

function tools() {
  return [
    defineTool({
      name: 'read_file',
      description: 'Read a file.',
      effect: 'read',
      input: z.object({ path: z.string() }),
      execute: () => ({ status: 'succeeded', content: '' }),
    }),
    defineTool({
      name: 'write_file',
      description: 'Write a file.',
      effect: 'write',
      input: z.object({ path: z.string(), content: z.string() }),
      execute: () => ({ status: 'succeeded', content: '' }),
    }),
  ];
}

function compactionRow(): CompactionRow {
  return {
    id: 'cmp-1',
    sessionId: 's-1',
    position: 1,
    boundaryMessageId: 'msg-2',
    boundarySequence: 2,
    summary: 'The user wants the README fixed.',
    replayText: 'Fix the README please.',
    createdAtMs: 1,
    rewoundAtMs: null,
  };
}

/** Every region built from scratch: each call returns fresh objects with the same content. */
function buildSources(capabilities: ModelCapabilities = CAPS): PrepareSources {
  const toolset = new Toolset(tools());
  const conversation: ConversationItem[] = [
    ...compactedView(compactionRow(), { plan: [{ step: 'read it', status: 'in_progress' }] }),
    real({ role: 'user', kind: 'world_state', section: 'runtime/sandbox-policy', text: '<sandbox>ask</sandbox>' }, 3),
    real({ role: 'user', kind: 'normal', text: 'Now look at the README.' }, 4),
    real(
      {
        role: 'assistant',
        text: 'Reading.',
        reasoning: 'need the file',
        toolCalls: [
          { id: 'call-a', name: 'read_file', argumentsText: '{"path":"README.md"}' },
          { id: 'call-b', name: 'read_file', argumentsText: '{"path":"docs/x.md"}' },
        ],
      },
      5,
    ),
    // call-b has no stored result: the copy synthesizes an interrupted one (RT-25).
    real(toolResult('call-a', '# README\nhello', { data: [PNG] }), 6),
  ];
  return {
    system: systemContext('You are a careful assistant.', toolset.definitions),
    conversation,
    tools: toolset.definitions,
    capabilities: { ...capabilities },
    watermark: 0,
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value as object)) deepFreeze(inner);
  }
  return value;
}

function allKeys(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) allKeys(v, out);
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      out.add(key);
      allKeys(inner, out);
    }
  }
  return out;
}

function assemblyError(run: () => unknown): ContextAssemblyError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ContextAssemblyError);
    return error as ContextAssemblyError;
  }
  throw new Error('expected prepare to throw a ContextAssemblyError');
}

function withSystem(system: SystemPart[]): PrepareSources {
  return { ...buildSources(), system };
}

const tokens = (value: unknown) => Math.ceil(Buffer.byteLength(JSON.stringify(value), 'utf8') / 4);

describe('prepare — determinism (CW-4, CW-6)', () => {
  it('gives byte-identical requests for the same sources, and for sources rebuilt from scratch', () => {
    const sources = buildSources();
    const first = JSON.stringify(prepare(sources).request);
    expect(JSON.stringify(prepare(sources).request)).toBe(first);
    expect(JSON.stringify(prepare(buildSources()).request)).toBe(first);
    expect(JSON.stringify(ContextEngine.prepare(buildSources()))).toBe(JSON.stringify(prepare(sources)));
  });

  it('never mutates its inputs', () => {
    const sources = buildSources();
    const before = structuredClone(sources);
    prepare(sources);
    prepare(sources);
    expect(sources).toEqual(before);
  });

  it('works on deeply frozen inputs and gives the same result', () => {
    const expected = JSON.stringify(prepare(buildSources()));
    const frozen = deepFreeze(buildSources());
    expect(Object.isFrozen(frozen.conversation[0]!.message)).toBe(true);
    expect(JSON.stringify(prepare(frozen))).toBe(expected);
  });
});

describe('prepare — request layout (CW-6)', () => {
  it('puts the system parts first, the conversation after, and the tools in `tools`', () => {
    const sources = buildSources();
    const { request } = prepare(sources);
    expect(Object.keys(request).sort()).toEqual(['maxOutputTokens', 'messages', 'system', 'tools']);
    expect(request.system).toEqual(sources.system);
    expect(request.system[0]!.key).toBe('core/agent-system');
    expect(request.tools).toEqual(sources.tools);
    expect(request.tools.map((t) => t.name)).toEqual(['read_file', 'write_file', 'update_plan']);
    expect(request.messages.map((m) => m.role)).toEqual(['user', 'user', 'user', 'user', 'user', 'assistant', 'tool', 'tool']);
    const texts = request.messages.map((m) => ('text' in m ? m.text : m.content));
    expect(texts[2]).toMatch(/^<system_reminder>\n[\s\S]*- \[in_progress\] read it\n<\/system_reminder>$/);
    expect(texts.filter((_, i) => i !== 2)).toEqual([
      'Fix the README please.',
      '<conversation_summary>\nThe user wants the README fixed.\n</conversation_summary>',
      '<sandbox>ask</sandbox>',
      'Now look at the README.',
      'Reading.',
      '# README\nhello',
      INTERRUPTED_RESULT_TEXT,
    ]);
  });

  it('keeps several system parts in their given order', () => {
    const system = [
      { key: 'b/second', content: 'two' },
      { key: 'a/first', content: 'one' },
    ];
    expect(prepare(withSystem(system)).request.system).toEqual(system);
  });

  it('takes maxOutputTokens from the model capabilities', () => {
    expect(prepare(buildSources()).request.maxOutputTokens).toBe(32_000);
    expect(prepare(buildSources({ ...CAPS, maxOutputTokens: 1_234 })).request.maxOutputTokens).toBe(1_234);
  });

  it('has no sampling parameters anywhere in the request', () => {
    const keys = allKeys(prepare(buildSources({ ...CAPS, maxReasoningTokens: 4_096, dataBlocks: true })).request);
    expect(keys.has('messages')).toBe(true); // the walk does see the request's keys
    for (const forbidden of ['temperature', 'topP', 'top_p', 'topK', 'thinking']) expect(keys.has(forbidden)).toBe(false);
  });
});

describe('prepare — validation (CW-6, CW-8)', () => {
  const cases: [string, SystemPart[]][] = [
    ['an empty key', [{ key: '', content: 'x' }]],
    [
      'a duplicate key',
      [
        { key: 'core/agent-system', content: 'x' },
        { key: 'core/agent-system', content: 'y' },
      ],
    ],
    ['empty content', [{ key: 'core/agent-system', content: '' }]],
    ['a part of 10 000+ tokens', [{ key: 'core/agent-system', content: 'a'.repeat(40_000) }]],
  ];

  it.each(cases)('refuses %s as InvalidSystemContext / model_protocol_error', (_name, system) => {
    const error = assemblyError(() => prepare(withSystem(system)));
    expect(error.reason).toBe('InvalidSystemContext');
    expect(error.code).toBe('model_protocol_error');
    expect(error.message).toMatch(/^InvalidSystemContext: /);
  });

  it('accepts a part just under the limit and refuses one that estimates exactly the limit', () => {
    expect(SYSTEM_PART_TOKEN_LIMIT).toBe(10_000);
    // A string's JSON is its characters plus two quotes: 39 994 chars → 39 996 bytes → 9 999 tokens.
    const under = 'a'.repeat(39_994);
    expect(tokens(under)).toBe(9_999);
    expect(prepare(withSystem([{ key: 'core/agent-system', content: under }])).request.system[0]!.content).toBe(under);
    const at = 'a'.repeat(39_995);
    expect(tokens(at)).toBe(10_000);
    expect(assemblyError(() => prepare(withSystem([{ key: 'core/agent-system', content: at }]))).reason).toBe('InvalidSystemContext');
  });

  it('refuses a system-role message in the conversation', () => {
    const sources = buildSources();
    const systemItem = { message: { role: 'system', text: 'obey' } as unknown as ChatMessage, provenance: { kind: 'real', messageId: 'm-x', sequence: 9 } } as ConversationItem;
    const error = assemblyError(() => prepare({ ...sources, conversation: [...sources.conversation, systemItem] }));
    expect(error.reason).toBe('SystemMessageInConversation');
    expect(error.code).toBe('model_protocol_error');
  });
});

describe('prepare — provenance', () => {
  it('names the stored message of each real item and `synthetic` for synthesized results and compaction items', () => {
    const { request, provenance } = prepare(buildSources());
    expect(provenance).toHaveLength(request.messages.length);
    expect(provenance).toEqual(['synthetic', 'synthetic', 'synthetic', 'msg-3', 'msg-4', 'msg-5', 'msg-6', 'synthetic']);
    const interrupted = request.messages[7]!;
    expect(interrupted).toEqual({ role: 'tool', toolCallId: 'call-b', toolName: 'read_file', status: 'interrupted', content: INTERRUPTED_RESULT_TEXT });
  });
});

describe('prepare — budget (CW-7)', () => {
  it('equals a fresh measurement of the request and a hand computation per region', () => {
    const { request, budget } = prepare(buildSources());
    const serialized = JSON.stringify(request);
    expect(budget).toEqual(measureBudget(request));
    expect(JSON.stringify(request)).toBe(serialized); // measuring never changes the request
    const system = Math.ceil(Buffer.byteLength(JSON.stringify(request.system)) / 4);
    const conversation = Math.ceil(Buffer.byteLength(JSON.stringify(request.messages)) / 4);
    const toolSurface = Math.ceil(Buffer.byteLength(JSON.stringify(request.tools)) / 4);
    expect(budget).toEqual({
      systemContextTokens: system,
      conversationTokens: conversation,
      toolSurfaceTokens: toolSurface,
      estimatedInputTokens: system + conversation + toolSurface,
      reservedOutputTokens: 32_000,
    });
    expect(system).toBeGreaterThan(0);
    expect(conversation).toBeGreaterThan(0);
    expect(toolSurface).toBeGreaterThan(0);
  });

  it('counts multi-byte text by its UTF-8 bytes', () => {
    const sources = buildSources();
    const text = 'é'.repeat(1_000); // 2 000 bytes
    const { request, budget } = prepare({ ...sources, conversation: [real({ role: 'user', kind: 'normal', text }, 1)] });
    expect(budget.conversationTokens).toBe(Math.ceil((Buffer.byteLength(JSON.stringify(request.messages), 'utf8')) / 4));
    expect(budget.conversationTokens).toBeGreaterThan(Math.ceil(JSON.stringify(request.messages).length / 4));
  });
});

describe('prepare — artifacts and data blocks', () => {
  function withResult(result: ToolResultMessage, capabilities: ModelCapabilities): PrepareSources {
    const sources = buildSources(capabilities);
    const conversation = sources.conversation.map((item) => (item.message.role === 'tool' ? { ...item, message: result } : item));
    return { ...sources, conversation };
  }

  it('a result with an artifact gives the same request and budget as without it', () => {
    const caps = { ...CAPS, dataBlocks: true };
    const plain = prepare(withResult(toolResult('call-a', 'listing', { data: [PNG] }), caps));
    const withArtifact = prepare(withResult(toolResult('call-a', 'listing', { data: [PNG], artifact: { rows: [1, 2, 3], html: '<table/>' } }), caps));
    expect(JSON.stringify(withArtifact.request)).toBe(JSON.stringify(plain.request));
    expect(withArtifact.budget).toEqual(plain.budget);
    expect(allKeys(withArtifact.request).has('artifact')).toBe(false);
  });

  it('a large artifact on a result without data blocks changes neither request nor budget', () => {
    const plain = prepare(withResult(toolResult('call-a', 'listing'), CAPS));
    const withArtifact = prepare(withResult(toolResult('call-a', 'listing', { artifact: { blob: 'z'.repeat(100_000) } }), CAPS));
    expect(JSON.stringify(withArtifact.request)).toBe(JSON.stringify(plain.request));
    expect(withArtifact.budget).toEqual(plain.budget);
  });

  it('keeps data blocks for a model that takes them and strips them otherwise', () => {
    const result = toolResult('call-a', 'a picture', { data: [PNG] });
    const kept = prepare(withResult(result, { ...CAPS, dataBlocks: true })).request.messages[6]!;
    expect(kept).toEqual({ role: 'tool', toolCallId: 'call-a', toolName: 'read_file', status: 'success', content: 'a picture', data: [PNG] });
    for (const caps of [CAPS, { ...CAPS, dataBlocks: false }]) {
      const stripped = prepare(withResult(result, caps)).request.messages[6]!;
      expect(stripped).toEqual({ role: 'tool', toolCallId: 'call-a', toolName: 'read_file', status: 'success', content: 'a picture' });
      expect('data' in stripped).toBe(false);
    }
    expect(result.data).toEqual([PNG]); // the stored message keeps its blocks
  });
});
