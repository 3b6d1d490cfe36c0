import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool, type ModelPort, type ModelRequest } from '../src/index.js';
import { DEFAULT_CAPABILITIES, replay } from '../src/model/scripted-model.js';

/**
 * The agent of the task figures: for the prompt `steps N` a zero-latency model calls `step` for
 * n = 1 … N (counting the results in the conversation, so a resumed task carries on) and then
 * answers; `step` waits `stepMs` and answers its n.
 */
export function benchTaskModel(): ModelPort {
  return {
    capabilities: DEFAULT_CAPABILITIES,
    async *stream(request: ModelRequest) {
      const at = request.messages.findLastIndex((m) => m.role === 'user' && /^steps \d+$/.test(m.text));
      const total = at >= 0 ? Number((request.messages[at] as { text: string }).text.slice(6)) : 0;
      const done = request.messages.slice(at + 1).filter((m) => m.role === 'tool' && m.status === 'success').length;
      yield* replay(done >= total ? { text: `done ${total}` } : { text: `step ${done + 1}`, toolCalls: [{ name: 'step', args: { n: done + 1 } }] });
    },
  };
}

export function benchTaskTools(stepMs: number) {
  return [
    defineTool({
      name: 'step',
      description: 'one step',
      effect: 'read',
      input: z.object({ n: z.number().int() }),
      execute: async ({ n }) => {
        if (stepMs > 0) await delay(stepMs);
        return { status: 'succeeded', content: String(n) };
      },
    }),
  ];
}
