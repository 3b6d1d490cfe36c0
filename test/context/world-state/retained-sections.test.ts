import { describe, expect, it } from 'vitest';
import { invalidationNotice } from '../../../src/context/world-state/notices.js';
import { scanRetainedSections } from '../../../src/context/world-state/retained-sections.js';
import type { ChatMessage } from '../../../src/protocol/messages.js';
import type { WorldStateSection } from '../../../src/context/world-state/types.js';

const worldState = (section: WorldStateSection, text: string): ChatMessage => ({ role: 'user', kind: 'world_state', section, text });
const AGENTS = '<project_instructions path="/w/AGENTS.md">\nrules\n</project_instructions>';

describe('scanRetainedSections', () => {
  it('finds the sections whose world_state message is in the conversation', () => {
    const messages: ChatMessage[] = [
      worldState('project/AGENTS.md', AGENTS),
      { role: 'user', kind: 'normal', text: 'hello' },
      { role: 'assistant', text: 'hi', reasoning: '', toolCalls: [] },
      worldState('runtime/sandbox-policy', '<sandbox_policy>…</sandbox_policy>'),
    ];
    expect(scanRetainedSections(messages)).toEqual(new Set(['project/AGENTS.md', 'runtime/sandbox-policy']));
  });

  it('ignores a normal user message with the same text, and other kinds', () => {
    const messages: ChatMessage[] = [
      { role: 'user', kind: 'normal', text: AGENTS },
      { role: 'user', kind: 'normal', text: AGENTS, section: 'project/AGENTS.md' },
      { role: 'user', kind: 'skill_instruction', text: AGENTS },
      { role: 'user', kind: 'world_state', text: AGENTS }, // no section field
    ];
    expect(scanRetainedSections(messages)).toEqual(new Set());
  });

  it('does not count a section whose latest message is its invalidation notice', () => {
    const messages = [worldState('project/AGENTS.md', AGENTS), worldState('project/AGENTS.md', invalidationNotice('project/AGENTS.md'))];
    expect(scanRetainedSections(messages)).toEqual(new Set());
  });

  it('counts a section sent again after its invalidation', () => {
    const messages = [
      worldState('project/AGENTS.md', AGENTS),
      worldState('project/AGENTS.md', invalidationNotice('project/AGENTS.md')),
      worldState('project/AGENTS.md', AGENTS),
    ];
    expect(scanRetainedSections(messages)).toEqual(new Set(['project/AGENTS.md']));
  });
});
