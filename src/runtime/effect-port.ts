import { fromCallback, type AnyActorRef } from 'xstate';
import type { EffectAbort, EffectCancel, EffectContract, EffectReply, EffectRequest } from '../../machines/effect-port.js';
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
 * to the requesting actor. It keeps each actor's one request in flight: a cancelled request — or
 * one replaced by a newer request from the same actor — has its signal aborted and gets no reply;
 * stopping the session aborts whatever is still running.
 */
export function effectPort(handlers: Record<string, AnyHandler>, cancellable: ReadonlySet<string>) {
  return fromCallback<EffectRequest | EffectCancel | EffectAbort>(({ receive }) => {
    /** Per requesting actor, its request in flight (the cancellation, null for an effect that cannot be cancelled). */
    const inflight = new Map<AnyActorRef, InFlight>();
    const abandon = (actor: AnyActorRef) => {
      inflight.get(actor)?.cancellation?.abort();
      inflight.delete(actor);
    };
    receive((event) => {
      const { replyTo } = event;
      if (event.type === 'effect.abort') return inflight.get(replyTo)?.cancellation?.abort();
      abandon(replyTo);
      if (event.type === 'effect.cancel') return;
      const { name, input } = event;
      const request: InFlight = { cancellation: cancellable.has(name) ? new EffectSignal() : null };
      inflight.set(replyTo, request);
      const reply = (message: EffectReply) => {
        if (inflight.get(replyTo) !== request) return; // cancelled or replaced: the chart has moved on
        inflight.delete(replyTo);
        replyTo.send(message);
      };
      run(handlers[name], name, input, request.cancellation ?? NEVER_CANCELLED).then(
        (output) => reply({ type: 'effect.done', output }),
        (error: unknown) => reply({ type: 'effect.failed', error }),
      );
    });
    return () => {
      for (const { cancellation } of inflight.values()) cancellation?.abort();
      inflight.clear();
    };
  });
}

interface InFlight {
  cancellation: EffectSignal | null;
}

function run(handler: AnyHandler | undefined, name: string, input: unknown, cancellation: EffectCancellation): Promise<unknown> {
  if (!handler) return Promise.reject(new Error(`no effect named '${name}' is provided`));
  try {
    return handler(input, cancellation);
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
