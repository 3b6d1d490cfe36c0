import type { ConversationItem, SyntheticReason } from '../context/conversation.js';
import type { Plan } from '../protocol/plan.js';

/** What the view reads of a stored checkpoint (`CompactionRow`). */
interface Checkpoint {
  id: string;
  summary: string;
  /** The last real user request when the checkpoint was made; null when there was none. */
  replayText: string | null;
}

/**
 * CP-2: what a checkpoint puts in front of the messages after its boundary — the last real user
 * request replayed, the summary, and a runtime reminder carrying the current plan. Built the same
 * way on install, on restart and on rewind, so nothing is ever injected twice.
 */
export function compactedView(row: Checkpoint, plan: Plan | null): ConversationItem[] {
  const item = (reason: SyntheticReason, text: string): ConversationItem => ({
    message: { role: 'user', kind: 'normal', text },
    provenance: { kind: 'synthetic', compactionId: row.id, reason },
  });
  const items: ConversationItem[] = [];
  if (row.replayText !== null) items.push(item('last_user_request_replay', row.replayText));
  items.push(item('compaction_summary', `<conversation_summary>\n${row.summary}\n</conversation_summary>`));
  items.push(item('system_reminder', reminderText(plan)));
  return items;
}

function reminderText(plan: Plan | null): string {
  const lines = ['<system_reminder>', 'Earlier parts of this conversation were compacted into the summary above.'];
  if (plan && plan.plan.length > 0) {
    lines.push('The current plan:');
    for (const step of plan.plan) lines.push(`- [${step.status}] ${step.step}`);
  } else {
    lines.push('No plan has been recorded.');
  }
  lines.push('</system_reminder>');
  return lines.join('\n');
}
