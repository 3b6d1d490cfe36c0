import type { ExecutedResult } from '../../machines/tool-call.effects.js';
import type { EffectCancellation } from './effect-port.js';
import { EffectSignal } from './effect-signal.js';
import { withDeadline } from '../util/deadline.js';

/**
 * A tool's time limit (`timeoutMs` on the tool, or the agent's `toolTimeoutMs`): when it passes, the
 * tool's signal is aborted exactly as a cancel aborts it, and the call ends with a `failed` result
 * saying so — the turn goes on, and the model sees the failure. A tool that ignores its signal is
 * not waited for; whatever it returns afterwards is dropped.
 */
export function withToolTimeLimit(
  timeoutMs: number,
  cancellation: EffectCancellation,
  run: (cancellation: EffectCancellation) => Promise<ExecutedResult>,
): Promise<ExecutedResult> {
  const deadline = new EffectSignal();
  let linked = false;
  // The tool gets one signal that a cancel or the deadline aborts, whichever comes first.
  const combined: EffectCancellation = {
    get aborted() {
      return cancellation.aborted || deadline.aborted;
    },
    get signal() {
      if (!linked) {
        linked = true;
        if (cancellation.aborted) deadline.abort();
        else cancellation.signal.addEventListener('abort', () => deadline.abort(), { once: true });
      }
      return deadline.signal;
    },
  };
  return withDeadline(run(combined), timeoutMs, () => {
    deadline.abort();
    // Issue 30: said in a field too, so a retry policy's guard need not read the text.
    return { status: 'failed', content: `the tool timed out after ${timeoutMs} ms and was cancelled`, failure: 'timeout' };
  });
}
