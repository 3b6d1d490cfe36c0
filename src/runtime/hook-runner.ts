import { TurnFailure } from '../protocol/tool-result.js';
import type { ChartClock } from './chart-clock.js';
import { EffectAborted } from './effect-aborted.js';
import type { EffectCancellation } from './effect-port.js';
import type { HookStage, ResolvedHook } from './hooks.js';
import { messageOf } from '../protocol/error-message.js';

/** A hook that threw, returned what its stage does not take, or passed its time limit: it fails closed. */
export class HookError extends TurnFailure {
  constructor(
    code: 'hook_failed' | 'hook_timeout',
    readonly stage: HookStage,
    message: string,
  ) {
    super(code, `${code}: ${message}`);
    this.name = 'HookError';
  }
}

/**
 * Runs one hook under its time limit, on the runtime's chart clock (so a `SimulatedClock` moves it in
 * tests). The hook's signal aborts on a cancel of the effect or when the limit passes; either way
 * the answer comes at once — a hook that ignores its signal is not waited for, and whatever it
 * returns afterwards is dropped.
 */
export function runHook<T>(
  stage: HookStage,
  hook: ResolvedHook<unknown>,
  cancellation: EffectCancellation,
  clock: ChartClock,
  call: (signal: AbortSignal) => T | Promise<T>,
): Promise<T> {
  if (cancellation.aborted) return Promise.reject(new EffectAborted(`the ${stage} hook`));
  const controller = new AbortController();
  const outer = cancellation.signal;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(timer);
      outer.removeEventListener('abort', onCancel);
      settle();
    };
    const onCancel = () => {
      controller.abort();
      finish(() => reject(new EffectAborted(`the ${stage} hook`)));
    };
    const timer = clock.setTimeout(() => {
      controller.abort();
      finish(() => reject(new HookError('hook_timeout', stage, `the ${stage} hook of the ${hook.owner} did not answer within ${hook.timeoutMs} ms`)));
    }, hook.timeoutMs);
    outer.addEventListener('abort', onCancel, { once: true });
    let returned: T | Promise<T>;
    try {
      returned = call(controller.signal);
    } catch (error) {
      return finish(() => reject(thrown(stage, hook, error)));
    }
    Promise.resolve(returned).then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(thrown(stage, hook, error))),
    );
  });
}

function thrown(stage: HookStage, hook: ResolvedHook<unknown>, error: unknown): HookError {
  const message = messageOf(error);
  return new HookError('hook_failed', stage, `the ${stage} hook of the ${hook.owner} threw: ${message}`);
}

/** A hook's answer its stage does not take: failed closed like a throw. */
export function invalidAnswer(stage: HookStage, hook: ResolvedHook<unknown>, explanation: string): HookError {
  return new HookError('hook_failed', stage, `the ${stage} hook of the ${hook.owner} answered what it may not: ${explanation}`);
}
