import type { ModelPort } from '../../../src/index.js';
import { DEFAULT_CAPABILITIES } from '../../../src/model/scripted-model.js';

/** A model that never runs out and never calls a tool: every request, turn or summary, is answered with `reply`. */
export function endlessModel(reply = 'ok'): ModelPort & { calls: number } {
  const model = {
    capabilities: DEFAULT_CAPABILITIES,
    calls: 0,
    async *stream() {
      model.calls += 1;
      yield { type: 'text_delta' as const, text: reply };
      yield { type: 'response_completed' as const, response: { text: reply, reasoning: '', toolCalls: [] } };
    },
  };
  return model;
}
