import type { SessionStorage } from '../../storage/session-storage.js';
import { compactedView } from '../compaction/compacted-view.js';
import type { Plan } from '../protocol/plan.js';
import type { StoredMessage } from '../protocol/messages.js';
import { ChatState } from './chat-state.js';

/**
 * The conversation as storage has it (RT-23, CP-3): the active checkpoint's projection, then the
 * messages after its boundary. Used on open, after a compaction or rewind (install), and on reload.
 */
export async function loadConversation(
  storage: SessionStorage,
  sessionId: string,
): Promise<{ chat: ChatState; plan: Plan | null; messages: readonly StoredMessage[] }> {
  const [messages, checkpoint, plan] = await Promise.all([
    storage.listMessages(sessionId),
    storage.activeCompaction(sessionId),
    storage.latestPlan(sessionId),
  ]);
  const current = plan?.plan ?? null;
  const projection = checkpoint ? compactedView(checkpoint, current) : [];
  return { chat: new ChatState(messages, projection, checkpoint?.boundarySequence ?? 0), plan: current, messages };
}
