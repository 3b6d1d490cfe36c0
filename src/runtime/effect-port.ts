import { fromCallback } from 'xstate';
import type { EffectCancel, EffectContract, EffectRequest } from '../../machines/effect-port.js';
import { EffectSignal, NEVER_CANCELLED } from './effect-signal.js';

/** What an effect is told about its cancellation: `aborted`, and an `AbortSignal` made on first read. */
export type EffectCancellation = Pick<EffectSignal, 'aborted' | 'signal'>;

/** The runtime's implementation of a chart's effects: one async function per effect name. */
export type EffectHandlers<E extends EffectContract> = {
  [K in keyof E]: (input: E[K]['input'], cancellation: EffectCancellation) => Promise<E[K]['output']>;
};

export type AnyHandler = (input: unknown, cancellation: EffectCancellation) => Promise<unknown>;

/**
 * The session's effect port (see machines/effect-port.ts): runs each requested effect and replies
 * to the requesting actor. A cancelled request has its signal aborted and gets no reply; stopping
 * the session aborts whatever is still running.
 */
export function effectPort(handlers: Record<string, AnyHandler>, cancellable: ReadonlySet<string>) {
  return fromCallback<EffectRequest | EffectCancel>(({ receive }) => {
    const inflight = new Map<string, EffectSignal | null>();
    receive((event) => {
      if (event.type === 'effect.cancel') {
        inflight.get(event.id)?.abort();
        inflight.delete(event.id);
        return;
      }
      const { id, name, input, replyTo } = event;
      const cancellation = cancellable.has(name) ? new EffectSignal() : null;
      inflight.set(id, cancellation);
      const reply = (message: { type: 'effect.done'; id: string; output: unknown } | { type: 'effect.failed'; id: string; error: unknown }) => {
        if (inflight.delete(id)) replyTo.send(message);
      };
      run(handlers[name], name, input, cancellation ?? NEVER_CANCELLED).then(
        (output) => reply({ type: 'effect.done', id, output }),
        (error: unknown) => reply({ type: 'effect.failed', id, error }),
      );
    });
    return () => {
      for (const cancellation of inflight.values()) cancellation?.abort();
      inflight.clear();
    };
  });
}

function run(handler: AnyHandler | undefined, name: string, input: unknown, cancellation: EffectCancellation): Promise<unknown> {
  if (!handler) return Promise.reject(new Error(`no effect named '${name}' is provided`));
  try {
    return handler(input, cancellation);
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
