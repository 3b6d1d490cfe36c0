import { enqueueActions, type AnyActorRef, type EventObject } from 'xstate';

/**
 * Effects as messages. The session invokes one long-lived effect port (registered in the actor
 * system as `effects`); a chart state asks it to run a named effect on entry and waits for the
 * reply event. Each reply carries the request id, and a chart only takes the reply it is waiting
 * for, so a late answer to an abandoned request is ignored. Leaving a cancellable state sends
 * `effect.cancel`, which aborts that effect's signal.
 *
 * Why not one invoked promise actor per effect: a request/reply message costs about a quarter of
 * creating, starting and stopping an actor (bench/ measures both), and a turn runs several effects
 * per model step. The charts still name every effect; the runtime supplies the port.
 */

export const EFFECT_PORT = 'effects';

/** A map of effect name → its input and output: the contract between a chart and the runtime. */
export type EffectContract = Record<string, { input: unknown; output: unknown }>;

/** One effect call: the name and the input that name takes. */
export type EffectCall<E extends EffectContract> = { [K in keyof E & string]: { name: K; input: E[K]['input'] } }[keyof E & string];

export interface EffectRequest {
  type: 'effect.request';
  id: string;
  name: string;
  input: unknown;
  replyTo: AnyActorRef;
}

export interface EffectCancel {
  type: 'effect.cancel';
  id: string;
}

export type EffectReply = { type: 'effect.done'; id: string; output: unknown } | { type: 'effect.failed'; id: string; error: unknown };

/** What a chart's context holds to match replies: the id of the request it waits for. */
export interface AwaitsEffects {
  effectSeq: number;
  pendingEffect: string | null;
}

/** The chart action that sends a request; its `params` name the effect and give its input. */
export function requestEffectAction<TContext extends AwaitsEffects, TEvent extends EventObject, E extends EffectContract>() {
  return enqueueActions<TContext, TEvent, EffectCall<E>, TEvent, never, never, never, never, never>(({ context, self, system, enqueue }, params) => {
    const { effectSeq } = context;
    const id = `${self.sessionId}:${effectSeq + 1}`;
    enqueue.assign({ effectSeq: effectSeq + 1, pendingEffect: id } as Partial<TContext>);
    enqueue.sendTo(port(system), { type: 'effect.request', id, name: params.name, input: params.input, replyTo: self });
  });
}

/** The chart action that abandons the pending request (its signal aborts; no reply follows). */
export function cancelEffectAction<TContext extends AwaitsEffects, TEvent extends EventObject>() {
  return enqueueActions<TContext, TEvent, undefined, TEvent, never, never, never, never, never>(({ context, system, enqueue }) => {
    const { pendingEffect } = context;
    if (pendingEffect === null) return;
    enqueue.assign({ pendingEffect: null } as Partial<TContext>);
    enqueue.sendTo(port(system), { type: 'effect.cancel', id: pendingEffect });
  });
}

/** Guard: this reply answers the request the chart is waiting for. */
export function isPendingEffect({ context, event }: { context: unknown; event: { type: string } }): boolean {
  return (event as Partial<EffectReply>).id === (context as AwaitsEffects).pendingEffect;
}

function port(system: { get: (id: string) => AnyActorRef | undefined }): AnyActorRef {
  const ref = system.get(EFFECT_PORT);
  if (!ref) throw new Error(`no '${EFFECT_PORT}' actor in this system: invoke the effect port with systemId '${EFFECT_PORT}'`);
  return ref;
}
