import { fromCallback } from 'xstate';
import type { EffectCancel, EffectContract, EffectRequest } from '../../machines/effect-port.js';

/** The runtime's implementation of a chart's effects: one async function per effect name. */
export type EffectHandlers<E extends EffectContract> = {
  [K in keyof E]: (input: E[K]['input'], signal: AbortSignal) => Promise<E[K]['output']>;
};

type AnyHandler = (input: unknown, signal: AbortSignal) => Promise<unknown>;

/** Nothing ever aborts it: handed to effects that cannot be cancelled. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * The session's effect port (see machines/effect-port.ts): runs each requested effect and replies
 * to the requesting actor. A cancelled request has its signal aborted and gets no reply; stopping
 * the session aborts whatever is still running.
 */
export function effectPort(handlers: Record<string, AnyHandler>, cancellable: ReadonlySet<string>) {
  return fromCallback<EffectRequest | EffectCancel>(({ receive }) => {
    const inflight = new Map<string, AbortController | null>();
    receive((event) => {
      if (event.type === 'effect.cancel') {
        inflight.get(event.id)?.abort();
        inflight.delete(event.id);
        return;
      }
      const { id, name, input, replyTo } = event;
      const controller = cancellable.has(name) ? new AbortController() : null;
      inflight.set(id, controller);
      const reply = (message: { type: 'effect.done'; id: string; output: unknown } | { type: 'effect.failed'; id: string; error: unknown }) => {
        if (inflight.delete(id)) replyTo.send(message);
      };
      run(handlers[name], name, input, controller?.signal ?? NEVER_ABORTED).then(
        (output) => reply({ type: 'effect.done', id, output }),
        (error: unknown) => reply({ type: 'effect.failed', id, error }),
      );
    });
    return () => {
      for (const controller of inflight.values()) controller?.abort();
      inflight.clear();
    };
  });
}

function run(handler: AnyHandler | undefined, name: string, input: unknown, signal: AbortSignal): Promise<unknown> {
  if (!handler) return Promise.reject(new Error(`no effect named '${name}' is provided`));
  try {
    return handler(input, signal);
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
