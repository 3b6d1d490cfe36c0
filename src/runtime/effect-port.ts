import { fromCallback, type ActorSystem, type AnyActorRef } from 'xstate';
import type { EffectAbort, EffectCancel, EffectContract, EffectReply, EffectRequest } from '../../machines/effect-port.js';
import { EffectSignal, NEVER_CANCELLED } from './effect-signal.js';

/** What an effect is told about its cancellation: `aborted`, and an `AbortSignal` made on first read. */
export type EffectCancellation = Pick<EffectSignal, 'aborted' | 'signal'>;

/** The runtime's implementation of a chart's effects: one async function per effect name. */
export type EffectHandlers<E extends EffectContract> = {
  [K in keyof E]: (input: E[K]['input'], cancellation: EffectCancellation) => Promise<E[K]['output']>;
};

export type AnyHandler = (input: unknown, cancellation: EffectCancellation) => Promise<unknown>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a session's system, whatever its actors
type AnyActorSystem = ActorSystem<any>;

interface InFlight {
  cancellation: EffectSignal | null;
}

/**
 * Runs a session's effects and replies to the requesting actor, keeping each actor's one request in
 * flight: a cancelled request — or one replaced by a newer request from the same actor — has its
 * signal aborted and gets no reply; `stop` aborts whatever is still running.
 */
export class EffectDispatcher {
  /** Per requesting actor, its request in flight (the cancellation, null for an effect that cannot be cancelled). */
  private readonly inflight = new Map<AnyActorRef, InFlight>();

  constructor(
    private readonly handlers: Record<string, AnyHandler>,
    private readonly cancellable: ReadonlySet<string>,
  ) {}

  request(replyTo: AnyActorRef, name: string, input: unknown): void {
    this.run(replyTo, this.track(replyTo, name), name, input);
  }

  /**
   * Like `request`, but the handler starts on the next microtask: asked from inside a chart's
   * transition, the effect then sees the chart in the state that asked for it, as it did when the
   * request travelled as a message. Cancelled or replaced before then, it never starts.
   */
  requestAfterTransition(replyTo: AnyActorRef, name: string, input: unknown): void {
    const request = this.track(replyTo, name);
    queueMicrotask(() => {
      if (this.inflight.get(replyTo) === request) this.run(replyTo, request, name, input);
    });
  }

  private track(replyTo: AnyActorRef, name: string): InFlight {
    this.cancel(replyTo);
    const request: InFlight = { cancellation: this.cancellable.has(name) ? new EffectSignal() : null };
    this.inflight.set(replyTo, request);
    return request;
  }

  private run(replyTo: AnyActorRef, request: InFlight, name: string, input: unknown): void {
    const reply = (message: EffectReply) => {
      if (this.inflight.get(replyTo) !== request) return; // cancelled or replaced: the chart has moved on
      this.inflight.delete(replyTo);
      replyTo.send(message);
    };
    run(this.handlers[name], name, input, request.cancellation ?? NEVER_CANCELLED).then(
      (output) => reply({ type: 'effect.done', output }),
      (error: unknown) => reply({ type: 'effect.failed', error }),
    );
  }

  /** Abandons the request in flight: its signal aborts and no reply follows. */
  cancel(replyTo: AnyActorRef): void {
    this.inflight.get(replyTo)?.cancellation?.abort();
    this.inflight.delete(replyTo);
  }

  /** Aborts the signal of the request in flight, which still replies. */
  abort(replyTo: AnyActorRef): void {
    this.inflight.get(replyTo)?.cancellation?.abort();
  }

  receive(event: EffectRequest | EffectCancel | EffectAbort): void {
    if (event.type === 'effect.request') this.request(event.replyTo, event.name, event.input);
    else if (event.type === 'effect.cancel') this.cancel(event.replyTo);
    else this.abort(event.replyTo);
  }

  stop(): void {
    for (const { cancellation } of this.inflight.values()) cancellation?.abort();
    this.inflight.clear();
  }

  /** Issue 26 (a session parking): abandons every request in flight but `keep`'s: signals abort, no replies follow. */
  abandonAllBut(keep: AnyActorRef): void {
    for (const [actor, { cancellation }] of this.inflight) {
      if (actor === keep) continue;
      cancellation?.abort();
      this.inflight.delete(actor);
    }
  }
}

/** The dispatcher of each session's actor system, registered by its effect port while it runs. */
const dispatchers = new WeakMap<AnyActorSystem, EffectDispatcher>();

/**
 * The session's effect port (see machines/effect-port.ts): an invoked actor that owns the session's
 * dispatcher for the session's lifetime. It still takes requests as messages; the runtime's charts
 * reach its dispatcher directly through `directEffectActions`.
 */
export function effectPort(handlers: Record<string, AnyHandler>, cancellable: ReadonlySet<string>) {
  return fromCallback<EffectRequest | EffectCancel | EffectAbort>(({ receive, system }) => {
    const dispatcher = new EffectDispatcher(handlers, cancellable);
    dispatchers.set(system, dispatcher);
    receive((event) => dispatcher.receive(event));
    return () => {
      dispatcher.stop();
      if (dispatchers.get(system) === dispatcher) dispatchers.delete(system);
    };
  });
}

function dispatcherOf(system: AnyActorSystem): EffectDispatcher {
  const dispatcher = dispatchers.get(system);
  if (!dispatcher) throw new Error('no effect port runs in this actor system: invoke the effect port with systemId "effects"');
  return dispatcher;
}

type ActionArgs = { self: AnyActorRef; system: AnyActorSystem };

/**
 * The charts' `requestEffect`, `cancelEffect` and `abortEffect`, as the runtime provides them: calls
 * on the session's dispatcher instead of messages to its port. The contract is the same — one request
 * in flight per actor, the reply an `effect.done`/`effect.failed` event — but a request no longer
 * passes through the port's mailbox: that hop was about a tenth of a model step's orchestration.
 * An effect's handler starts once the requesting chart has finished its transition (a microtask
 * later); its reply always arrives later still, as an event.
 */
export function directEffectActions() {
  return {
    requestEffect: ({ self, system }: ActionArgs, params: { name: string; input: unknown }) =>
      dispatcherOf(system).requestAfterTransition(self, params.name, params.input),
    cancelEffect: ({ self, system }: ActionArgs) => dispatcherOf(system).cancel(self),
    abortEffect: ({ self, system }: ActionArgs) => dispatcherOf(system).abort(self),
  };
}

/** Issue 26: the session's `abandonTurnEffects`: what its turn and calls have in flight stops, and nothing replies. */
export function abandonTurnEffects({ self, system }: { self: AnyActorRef; system: AnyActorSystem }): void {
  dispatcherOf(system).abandonAllBut(self);
}

function run(handler: AnyHandler | undefined, name: string, input: unknown, cancellation: EffectCancellation): Promise<unknown> {
  if (!handler) return Promise.reject(new Error(`no effect named '${name}' is provided`));
  try {
    return handler(input, cancellation);
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
