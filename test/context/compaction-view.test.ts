import { describe, expect, it } from 'vitest';
import type { ChatMessage, ConversationItem, ModelCapabilities, Plan } from '../../src/index.js';
import { compactedView } from '../../src/compaction/compacted-view.js';
import { SUMMARY_INSTRUCTION, summaryRequest } from '../../src/compaction/summary-request.js';
import { lastRealUserRequest } from '../../src/context/conversation.js';
import { pruneText } from '../../src/context/prune.js';
import { systemContext } from '../../src/context/system-context.js';
import { Toolset } from '../../src/tools/toolset.js';
import type { CompactionRow } from '../../storage/session-storage.js';

function row(overrides: Partial<CompactionRow> = {}): CompactionRow {
  return {
    id: 'cmp-7',
    sessionId: 's-1',
    position: 1,
    boundaryMessageId: 'msg-4',
    boundarySequence: 4,
    summary: 'Fixed two typos in README.md.',
    replayText: 'Please fix the README.',
    createdAtMs: 1,
    rewoundAtMs: null,
    ...overrides,
  };
}

function real(message: ChatMessage, sequence: number): ConversationItem {
  return { message, provenance: { kind: 'real', messageId: `msg-${sequence}`, sequence } };
}

const userOf = (kind: 'normal' | 'world_state' | 'skill_instruction' | 'agent_message', text: string): ChatMessage => ({ role: 'user', kind, text });
const textOf = (item: ConversationItem) => (item.message.role === 'user' ? item.message.text : null);

const PLAN: Plan = {
  plan: [
    { step: 'read README.md', status: 'completed' },
    { step: 'fix the typos', status: 'in_progress' },
    { step: 'run the linter', status: 'pending' },
  ],
};

describe('compactedView (CP-2)', () => {
  it('replays the last request, wraps the summary, and reminds of the plan, all synthetic with the compaction id', () => {
    const items = compactedView(row(), PLAN);
    expect(items.map((i) => i.provenance)).toEqual([
      { kind: 'synthetic', compactionId: 'cmp-7', reason: 'last_user_request_replay' },
      { kind: 'synthetic', compactionId: 'cmp-7', reason: 'compaction_summary' },
      { kind: 'synthetic', compactionId: 'cmp-7', reason: 'system_reminder' },
    ]);
    for (const item of items) expect(item.message).toMatchObject({ role: 'user', kind: 'normal' });
    expect(textOf(items[0]!)).toBe('Please fix the README.');
    expect(textOf(items[1]!)).toBe('<conversation_summary>\nFixed two typos in README.md.\n</conversation_summary>');
    const reminder = textOf(items[2]!)!;
    expect(reminder.startsWith('<system_reminder>\n')).toBe(true);
    expect(reminder.endsWith('\n</system_reminder>')).toBe(true);
    expect(reminder).toContain('- [completed] read README.md\n- [in_progress] fix the typos\n- [pending] run the linter\n');
    expect(reminder).not.toContain('No plan has been recorded.');
  });

  it('has no replay when the row has no replay text', () => {
    const items = compactedView(row({ replayText: null }), PLAN);
    expect(items.map((i) => i.provenance.kind === 'synthetic' && i.provenance.reason)).toEqual(['compaction_summary', 'system_reminder']);
  });

  it('says no plan has been recorded without a plan, or with an empty one', () => {
    for (const plan of [null, { plan: [] }]) {
      const reminder = textOf(compactedView(row(), plan)[2]!)!;
      expect(reminder).toContain('No plan has been recorded.');
      expect(reminder).not.toMatch(/^- \[/m);
    }
  });

  it('is the same for the same row and plan', () => {
    expect(JSON.stringify(compactedView(row(), PLAN))).toBe(JSON.stringify(compactedView(row(), structuredClone(PLAN))));
  });
});

describe('lastRealUserRequest (CW-3)', () => {
  const base = [real(userOf('normal', 'first ask'), 1), real({ role: 'assistant', text: 'ok', reasoning: '', toolCalls: [] }, 2), real(userOf('normal', 'second ask'), 3)];

  it.each(['world_state', 'skill_instruction', 'agent_message'] as const)('skips a trailing %s message', (kind) => {
    expect(lastRealUserRequest([...base, real(userOf(kind, `a ${kind}`), 4)])).toBe('second ask');
    expect(lastRealUserRequest([...base, real(userOf(kind, 'x'), 4), real(userOf(kind, 'y'), 5)])).toBe('second ask');
  });

  it('skips a synthetic summary and reminder but accepts a previous replay', () => {
    const view = compactedView(row({ replayText: 'replayed ask' }), PLAN);
    expect(lastRealUserRequest(view)).toBe('replayed ask');
    expect(lastRealUserRequest([...view, real(userOf('world_state', 'ws'), 5)])).toBe('replayed ask');
    expect(lastRealUserRequest([...view, real(userOf('normal', 'newer ask'), 5), real(userOf('agent_message', 'ping'), 6)])).toBe('newer ask');
  });

  it('returns null when nothing qualifies', () => {
    expect(lastRealUserRequest([])).toBeNull();
    expect(lastRealUserRequest(compactedView(row({ replayText: null }), PLAN))).toBeNull();
    expect(
      lastRealUserRequest([
        real(userOf('world_state', 'ws'), 1),
        real(userOf('skill_instruction', 'skill'), 2),
        real(userOf('agent_message', 'hi'), 3),
        real({ role: 'assistant', text: 'hello', reasoning: '', toolCalls: [] }, 4),
      ]),
    ).toBeNull();
  });
});

describe('summaryRequest (CP-2)', () => {
  const CAPS: ModelCapabilities = { contextWindow: 200_000, maxOutputTokens: 32_000, maxReasoningTokens: 0 };
  const PROMPT = 'You are a careful assistant.';
  const longOutput = 'line of output\n'.repeat(2_000); // 30 000 chars

  function conversation(): ConversationItem[] {
    return [
      real({ role: 'user', kind: 'world_state', section: 'project/AGENTS.md', text: 'WORLD-STATE-AGENTS' }, 1),
      real(userOf('normal', 'Please fix the README.'), 2),
      real({ role: 'assistant', text: '', reasoning: '', toolCalls: [{ id: 'c1', name: 'read_file', argumentsText: '{"path":"README.md"}' }] }, 3),
      real({ role: 'tool', toolCallId: 'c1', toolName: 'read_file', status: 'succeeded', content: longOutput }, 1_000),
      real({ role: 'user', kind: 'world_state', section: 'runtime/sandbox-policy', text: 'WORLD-STATE-SANDBOX' }, 1_001),
      real({ role: 'assistant', text: 'Fixed.', reasoning: '', toolCalls: [] }, 1_002),
    ];
  }

  it('uses only the agent prompt as system context and advertises no tools', () => {
    const request = summaryRequest(PROMPT, conversation(), CAPS);
    expect(request.system).toEqual([{ key: 'core/agent-system', content: PROMPT }]);
    const turnSystem = systemContext(PROMPT, new Toolset([]).definitions)[0]!.content;
    expect(turnSystem).not.toBe(PROMPT); // the turn's system context does carry tool rules…
    expect(JSON.stringify(request.system)).not.toContain('update_plan'); // …the summary's does not
    expect(request.tools).toEqual([]);
  });

  it('leaves world-state messages out and ends with the summary instruction', () => {
    const request = summaryRequest(PROMPT, conversation(), CAPS);
    expect(JSON.stringify(request)).not.toContain('WORLD-STATE');
    expect(request.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
    expect(request.messages.at(-1)).toEqual({ role: 'user', text: SUMMARY_INSTRUCTION });
  });

  it('caps the output at min(16 384, the model maximum)', () => {
    expect(summaryRequest(PROMPT, conversation(), CAPS).maxOutputTokens).toBe(16_384);
    expect(summaryRequest(PROMPT, conversation(), { ...CAPS, maxOutputTokens: 16_384 }).maxOutputTokens).toBe(16_384);
    expect(summaryRequest(PROMPT, conversation(), { ...CAPS, maxOutputTokens: 4_096 }).maxOutputTokens).toBe(4_096);
  });

  it('prunes long tool results however recent', () => {
    const tool = summaryRequest(PROMPT, conversation(), CAPS).messages.find((m) => m.role === 'tool');
    expect(tool).toMatchObject({ toolCallId: 'c1', content: pruneText(longOutput) });
    expect(pruneText(longOutput)).not.toBe(longOutput);
  });

  it('does not touch the conversation it summarizes and is deterministic', () => {
    const items = conversation();
    const before = structuredClone(items);
    const first = JSON.stringify(summaryRequest(PROMPT, items, CAPS));
    expect(JSON.stringify(summaryRequest(PROMPT, conversation(), CAPS))).toBe(first);
    expect(items).toEqual(before);
  });
});
