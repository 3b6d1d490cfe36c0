import { z } from 'zod';
import { defineTool, type ModelPort, type ModelRequest, type RequestMessage, type ScriptedReply } from '../../src/index.js';
import { DEFAULT_CAPABILITIES, replay } from '../../src/model/scripted-model.js';

/**
 * A model for task tests that decides from the conversation alone, so a task resumed by another
 * worker carries on where its conversation stands: for the last prompt `steps N` it calls the `step`
 * tool with n = 1 … N — counting only results that succeeded, so a step whose result never became
 * durable is asked for again under a new call — then answers `done N`; for `block` it calls `block`
 * once and then answers. Any other prompt is answered at once.
 */
export function taskModel(): ModelPort & { calls: number } {
  const model = {
    calls: 0,
    capabilities: DEFAULT_CAPABILITIES,
    async *stream(request: ModelRequest) {
      model.calls += 1;
      yield* replay(decide(request.messages));
    },
  };
  return model;
}

function decide(messages: RequestMessage[]): ScriptedReply {
  const promptAt = messages.findLastIndex((m) => m.role === 'user' && /^(steps \d+|block)$/.test(m.text));
  const prompt = promptAt >= 0 ? (messages[promptAt] as { text: string }).text : '';
  const results = messages.slice(promptAt + 1).filter((m): m is Extract<RequestMessage, { role: 'tool' }> => m.role === 'tool');
  const steps = /^steps (\d+)$/.exec(prompt);
  if (steps) {
    const total = Number(steps[1]);
    const done = new Set(results.filter((r) => r.toolName === 'step' && r.status === 'success').map((r) => Number(r.content)));
    const next = Array.from({ length: total }, (_, i) => i + 1).find((n) => !done.has(n));
    return next === undefined ? { text: `done ${total}` } : { text: `step ${next}`, toolCalls: [{ name: 'step', args: { n: next } }] };
  }
  if (prompt === 'block') return results.some((r) => r.toolName === 'block') ? { text: 'unblocked' } : { text: 'blocking', toolCalls: [{ name: 'block', args: {} }] };
  return { text: 'nothing to do' };
}

/** What the task tools did: every `step` run (by task session and n), and the `block` calls waiting. */
export class TaskToolLog {
  readonly steps: Array<{ sessionId: string; toolCallId: string; n: number }> = [];
  readonly blocked: Array<{ toolCallId: string; signal: AbortSignal; release: () => void }> = [];
  private waiters: Array<() => void> = [];

  /** Resolves once `count` block calls are waiting. */
  untilBlocked(count = 1): Promise<void> {
    if (this.blocked.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(() => this.blocked.length >= count && resolve()));
  }

  notify(): void {
    for (const waiter of this.waiters) waiter();
  }
}

/** `step` records its run and answers its n; `block` waits until released or aborted. */
export function taskTools(log: TaskToolLog, onStep?: (run: { sessionId: string; toolCallId: string; n: number }) => void) {
  return [
    defineTool({
      name: 'step',
      description: 'one step of the task',
      effect: 'write',
      input: z.object({ n: z.number().int() }),
      execute: ({ n }, ctx) => {
        const run = { sessionId: ctx.sessionId, toolCallId: ctx.toolCallId, n };
        log.steps.push(run);
        onStep?.(run);
        return { status: 'succeeded', content: String(n) };
      },
    }),
    defineTool({
      name: 'block',
      description: 'waits for the test',
      effect: 'read',
      input: z.object({}),
      execute: (_args, ctx) =>
        new Promise((resolve) => {
          const release = () => resolve({ status: 'succeeded', content: 'released' });
          ctx.signal.addEventListener('abort', () => resolve({ status: 'cancelled', content: 'aborted' }), { once: true });
          log.blocked.push({ toolCallId: ctx.toolCallId, signal: ctx.signal, release });
          log.notify();
        }),
    }),
  ];
}
