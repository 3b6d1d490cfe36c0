import { sendTo, type AnyActorRef, type EventObject, type MachineContext } from 'xstate';

/**
 * Effects as messages. The session invokes one long-lived effect port (registered in the actor
 * system as `effects`); a chart state asks it to run a named effect on entry and waits for the
 * reply event. Leaving a cancellable state sends `effect.cancel`, which aborts that effect's signal.
 *
 * One request at a time per actor. A chart leaves a waiting state only on the reply or after
 * `cancelEffect`, and the port keeps each actor's one request in flight: a cancelled request gets
 * no reply, and a new request from the same actor replaces (cancels) one still in flight. So a
 * reply that arrives answers the request the chart is waiting for, and charts keep no request ids
 * in context — an id per request was an `assign`, and every `assign` copies the snapshot.
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
  name: string;
  input: unknown;
  replyTo: AnyActorRef;
}

/** Abandons the request `replyTo` has in flight, if any. */
export interface EffectCancel {
  type: 'effect.cancel';
  replyTo: AnyActorRef;
}

/** Aborts the signal of the request `replyTo` has in flight, which still replies: the chart waits for that reply. */
export interface EffectAbort {
  type: 'effect.abort';
  replyTo: AnyActorRef;
}

export type EffectReply = { type: 'effect.done'; output: unknown } | { type: 'effect.failed'; error: unknown };

/**
 * The output of an `effect.done` reply, typed as the effect the chart waits for returns it; undefined
 * for any other event. Guards and actions read replies through this and `failureOf`-style helpers
 * rather than casting the event inline.
 */
export function doneOutput<T>(event: EventObject): T | undefined {
  return event.type === 'effect.done' ? ((event as Extract<EffectReply, { type: 'effect.done' }>).output as T) : undefined;
}

/** The error of an `effect.failed` reply; undefined for any other event. */
export function failedError(event: EventObject): unknown {
  return event.type === 'effect.failed' ? (event as Extract<EffectReply, { type: 'effect.failed' }>).error : undefined;
}

/** What a failed effect's error may say about itself, each field checked where it is read. */
export type EffectErrorTraits = { kind?: unknown; semanticOutputProduced?: unknown; reloadRequired?: unknown } | null | undefined;

/** The chart action that sends a request; its `params` name the effect and give its input. */
export function requestEffectAction<TContext extends MachineContext, TEvent extends EventObject, E extends EffectContract>() {
  return sendTo<TContext, TEvent, EffectCall<E>, AnyActorRef, TEvent>(
    ({ system }) => port(system),
    ({ self }: { self: AnyActorRef }, params: EffectCall<E>): EffectRequest => ({ type: 'effect.request', name: params.name, input: params.input, replyTo: self }),
  );
}

/** The chart action that abandons the pending request (its signal aborts; no reply follows). */
export function cancelEffectAction<TContext extends MachineContext, TEvent extends EventObject>() {
  return sendTo<TContext, TEvent, undefined, AnyActorRef, TEvent>(
    ({ system }) => port(system),
    ({ self }: { self: AnyActorRef }): EffectCancel => ({ type: 'effect.cancel', replyTo: self }),
  );
}

/**
 * The chart action that aborts the pending request's signal but keeps waiting for its reply: for an
 * effect that must not be abandoned half-way (it may be writing), yet whose reads or model call stop.
 */
export function abortEffectAction<TContext extends MachineContext, TEvent extends EventObject>() {
  return sendTo<TContext, TEvent, undefined, AnyActorRef, TEvent>(
    ({ system }) => port(system),
    ({ self }: { self: AnyActorRef }): EffectAbort => ({ type: 'effect.abort', replyTo: self }),
  );
}

function port(system: { get: (id: string) => AnyActorRef | undefined }): AnyActorRef {
  const ref = system.get(EFFECT_PORT);
  if (!ref) throw new Error(`no '${EFFECT_PORT}' actor in this system: invoke the effect port with systemId '${EFFECT_PORT}'`);
  return ref;
}
