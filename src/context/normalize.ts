import { INTERRUPTED_RESULT_TEXT, modelVisibleStatus, type ChatMessage, type ToolResultMessage } from '../protocol/messages.js';
import type { RequestMessage } from '../protocol/model.js';

/**
 * The protocol-repair pass of the request copy (CW-4, RT-25). Each assistant message is followed
 * directly by the results of its calls in call order; results that are misplaced move there,
 * duplicates and orphans are dropped, and a call with no stored result gets a synthesized
 * `interrupted` result. Works on a copy: chat state and storage are never touched.
 */
export function normalizeConversation(messages: readonly ChatMessage[]): RequestMessage[] {
  const results = firstResultPerCall(messages);
  const out: RequestMessage[] = [];
  for (const message of messages) {
    if (message.role === 'user') out.push({ role: 'user', text: message.text });
    if (message.role !== 'assistant') continue;
    out.push({ role: 'assistant', text: message.text, reasoning: message.reasoning, toolCalls: message.toolCalls });
    for (const call of message.toolCalls) {
      const result = results.get(call.id);
      out.push(
        result
          ? { role: 'tool', toolCallId: call.id, toolName: call.name, status: modelVisibleStatus(result.status), content: result.content }
          : { role: 'tool', toolCallId: call.id, toolName: call.name, status: 'interrupted', content: INTERRUPTED_RESULT_TEXT },
      );
    }
  }
  return out;
}

function firstResultPerCall(messages: readonly ChatMessage[]): Map<string, ToolResultMessage> {
  const results = new Map<string, ToolResultMessage>();
  for (const message of messages) {
    if (message.role === 'tool' && !results.has(message.toolCallId)) results.set(message.toolCallId, message);
  }
  return results;
}
