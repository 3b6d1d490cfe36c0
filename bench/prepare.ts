/**
 * `prepare_*_messages_us`: how long `ContextEngine.prepare` takes for a long conversation — one
 * fifth tool results, one in ten of those above the pruning size, the older half below the
 * watermark — at 1 000 and 10 000 messages, to show the cost grows linearly.
 */
import { prepare, type PrepareSources } from '../src/context/engine.js';
import type { ConversationItem } from '../src/context/conversation.js';
import type { ChatMessage } from '../src/protocol/messages.js';
import { median } from './common.js';

function conversation(size: number): ConversationItem[] {
  const items: ConversationItem[] = [];
  const add = (message: ChatMessage) => {
    const sequence = items.length + 1;
    items.push({ message, provenance: { kind: 'real', messageId: `m${sequence}`, sequence } });
  };
  for (let group = 0; items.length < size; group++) {
    const callId = `call-${group}`;
    add({ role: 'user', kind: 'normal', text: `request ${group}: please look at file ${group}` });
    add({ role: 'assistant', text: 'Looking.', reasoning: '', toolCalls: [{ id: callId, name: 'read_file', argumentsText: `{"path":"f${group}.txt"}` }] });
    add({ role: 'tool', toolCallId: callId, toolName: 'read_file', status: 'succeeded', content: 'line of text\n'.repeat(group % 10 === 0 ? 800 : 40) });
    add({ role: 'assistant', text: `File ${group} holds lines of text.`, reasoning: '', toolCalls: [] });
    add({ role: 'user', kind: 'agent_message', text: `worker note ${group}`, from: 'worker' });
  }
  return items.slice(0, size);
}

function sources(size: number): PrepareSources {
  return {
    system: [{ key: 'core/agent-system', content: 'You are a benchmark agent.' }],
    conversation: conversation(size),
    tools: [{ name: 'read_file', description: 'Read a file', inputSchema: { type: 'object' } }],
    capabilities: { contextWindow: 200_000, maxOutputTokens: 8_000, maxReasoningTokens: 0 },
    watermark: Math.floor(size / 2),
  };
}

export interface PrepareResult {
  medianUs: Record<number, number>;
  /** µs at the larger size ÷ µs at the smaller: 10 means linear. */
  growth: number;
}

export function measurePrepare(sizes: readonly [number, number] = [1_000, 10_000], runs = 40): PrepareResult {
  const medianUs: Record<number, number> = {};
  for (const size of sizes) {
    const input = sources(size);
    for (let i = 0; i < 10; i++) prepare(input);
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      prepare(input);
      samples.push((performance.now() - started) * 1000);
    }
    medianUs[size] = median(samples);
  }
  return { medianUs, growth: medianUs[sizes[1]]! / medianUs[sizes[0]]! };
}
