import type { ChatMessage } from '../../protocol/messages.js';
import { invalidationNotice } from './notices.js';
import type { WorldStateSection } from './types.js';

/**
 * The sections the model can currently see: their latest `world_state` message is still in the
 * conversation and is not an invalidation notice. Messages are recognised by kind and section
 * only, so a user typing the same markers never counts as the section being present.
 */
export function scanRetainedSections(messages: readonly ChatMessage[]): Set<WorldStateSection> {
  const latest = new Map<WorldStateSection, string>();
  for (const message of messages) {
    if (message.role === 'user' && message.kind === 'world_state' && message.section !== undefined) {
      latest.set(message.section, message.text);
    }
  }
  const retained = new Set<WorldStateSection>();
  for (const [section, text] of latest) if (text !== invalidationNotice(section)) retained.add(section);
  return retained;
}
