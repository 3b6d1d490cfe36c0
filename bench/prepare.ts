/**
 * `prepare_*_messages_us`: how long `ContextEngine.prepare` takes for a long conversation — one
 * fifth tool results, one in ten of those above the pruning size, the older half below the
 * watermark — at 1 000 and 10 000 messages, to show the cost grows linearly.
 *
 * Each sample prepares the same sources again, as the runtime prepares every model step from the
 * chat state's one conversation array (the bench loads its history into a `ChatState` too):
 * `prepare` keeps the request copy per array and extends it by what was appended, so this is the
 * per-step cost (copying the request's arrays). The first call on an array builds the whole copy;
 * `rebuildUs` times that separately on a new plain array of the same items (as a compaction's
 * summary request does), which also checks every kept item when prepared again.
 * Warm-up is long enough for the JIT to optimize at both sizes: with a few calls only, the smaller
 * size ran unoptimized code and looked slower than it is, making the growth look better than it is.
 */
import { prepare, type PrepareSources } from '../src/context/engine.js';
import type { ConversationItem } from '../src/context/conversation.js';
import type { ChatMessage, StoredMessage } from '../src/protocol/messages.js';
import { ChatState } from '../src/runtime/chat-state.js';
import { median } from './common.js';

/** The stored history of a long session, loaded into a chat state as the runtime does. */
function conversation(size: number): readonly ConversationItem[] {
  const stored: StoredMessage[] = [];
  const add = (message: ChatMessage) => {
    const sequence = stored.length + 1;
    stored.push({ id: `m${sequence}`, sessionId: 'bench', turnId: 'bench-turn', sequence, createdAtMs: 0, message });
  };
  for (let group = 0; stored.length < size; group++) {
    const callId = `call-${group}`;
    add({ role: 'user', kind: 'normal', text: `request ${group}: please look at file ${group}` });
    add({ role: 'assistant', text: 'Looking.', reasoning: '', toolCalls: [{ id: callId, name: 'read_file', argumentsText: `{"path":"f${group}.txt"}` }] });
    add({ role: 'tool', toolCallId: callId, toolName: 'read_file', status: 'succeeded', content: 'line of text\n'.repeat(group % 10 === 0 ? 800 : 40) });
    add({ role: 'assistant', text: `File ${group} holds lines of text.`, reasoning: '', toolCalls: [] });
    add({ role: 'user', kind: 'agent_message', text: `worker note ${group}`, from: 'worker' });
  }
  return new ChatState(stored.slice(0, size)).view();
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
  /** Median µs of a first call on a new array of the same items: the whole copy built again. */
  rebuildUs: Record<number, number>;
}

const WARM_UP_CALLS = 200;
/** Rebuilds warm up and are timed this many times each (they cost milliseconds at 10 000). */
const REBUILD_RUNS = 40;

export function measurePrepare(sizes: readonly [number, number] = [1_000, 10_000], runs = 200): PrepareResult {
  const medianUs: Record<number, number> = {};
  const rebuildUs: Record<number, number> = {};
  for (const size of sizes) {
    const input = sources(size);
    for (let i = 0; i < WARM_UP_CALLS; i++) prepare(input);
    medianUs[size] = median(timed(runs, () => input));
    const rebuild = () => ({ ...input, conversation: [...input.conversation] });
    timed(REBUILD_RUNS, rebuild);
    rebuildUs[size] = median(timed(REBUILD_RUNS, rebuild));
  }
  return { medianUs, growth: medianUs[sizes[1]]! / medianUs[sizes[0]]!, rebuildUs };
}

/** µs of `prepare` per run; the sources are made before the clock starts. */
function timed(runs: number, next: () => PrepareSources): number[] {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const input = next();
    const started = performance.now();
    prepare(input);
    samples.push((performance.now() - started) * 1000);
  }
  return samples;
}
