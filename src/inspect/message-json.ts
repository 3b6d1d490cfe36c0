import { takenTransition } from './actor-state.js';
import type { ActorChange, ActorInfo, ActorState } from './stream-protocol.js';

/**
 * The stream's messages written as JSON by hand around what a step said: the watch writes most of
 * a message from pieces serialized once (an actor's id and info, the transitions of its chart, the
 * state ids, event types and statuses it uses again and again), and stringifies only the values a
 * step brought. A `JSON.stringify` call costs about as much as a dozen map lookups before it writes
 * anything, and a step makes some twenty-five messages. What comes out is what `JSON.stringify` of the
 * message's object gives, key for key, in the order of `StreamItem`'s types.
 */

/** An actor as the watch knows it: its info, and the JSON of its id and of its info. */
export interface KnownActor {
  info: ActorInfo;
  id: string;
  json: string;
}

export function knownActor(info: ActorInfo): KnownActor {
  return { info, id: quoted(info.actorId), json: JSON.stringify(info) };
}

/**
 * Strings a chart uses again and again — state ids, event types, statuses, child names, context
 * keys — as JSON strings. Bounded as the sanitizer's judged keys are: an unbounded set (ids used as
 * keys) empties it rather than grows it.
 */
const quotedStrings = new Map<string, string>();

function quoted(text: string): string {
  let json = quotedStrings.get(text);
  if (json === undefined) {
    json = JSON.stringify(text);
    if (quotedStrings.size >= 10_000) quotedStrings.clear();
    quotedStrings.set(text, json);
  }
  return json;
}

/** `,"name":value` as JSON.stringify writes a member, or nothing for a value it leaves out (undefined, a function). */
export function jsonMember(name: string, value: unknown): string {
  const json = JSON.stringify(value) as string | undefined;
  return json === undefined ? '' : `,"${name}":${json}`;
}

/** A string member of a chart's vocabulary (an event's type): quoted once; anything else as JSON.stringify writes it. */
export function wordMember(name: string, value: unknown): string {
  return typeof value === 'string' ? `,"${name}":${quoted(value)}` : jsonMember(name, value);
}

/**
 * XState's transition definitions are the chart's own objects, made once per machine: a microstep
 * hands the same few again and again, so each one's JSON is written once.
 */
const transitionJson = new WeakMap<object, string>();

/** The transitions of an actor's microsteps since its last snapshot, as the JSON of a `TakenTransition[]`. */
export function transitionsJson(microsteps: readonly (readonly unknown[])[] | undefined): string {
  if (microsteps === undefined) return '[]';
  let out = '';
  for (const transitions of microsteps) {
    for (const transition of transitions) {
      let json = typeof transition === 'object' && transition !== null ? transitionJson.get(transition) : undefined;
      if (json === undefined) {
        json = JSON.stringify(takenTransition(transition));
        if (typeof transition === 'object' && transition !== null) transitionJson.set(transition, json);
      }
      out += out === '' ? json : `,${json}`;
    }
  }
  return `[${out}]`;
}

/** State ids, or context keys. */
function wordsJson(words: readonly string[]): string {
  let out = '';
  for (const word of words) out += out === '' ? quoted(word) : `,${quoted(word)}`;
  return `[${out}]`;
}

/** Child name → actor id. */
function childrenJson(children: Record<string, string>): string {
  let out = '';
  for (const name of Object.keys(children)) out += `${out === '' ? '' : ','}${quoted(name)}:${quoted(children[name]!)}`;
  return `{${out}}`;
}

/** Context keys with their sanitized values: the keys from the chart's vocabulary, each value stringified. */
function setJson(set: Record<string, unknown>): string {
  let out = '';
  for (const key of Object.keys(set)) {
    const json = JSON.stringify(set[key]) as string | undefined;
    if (json !== undefined) out += `${out === '' ? '' : ','}${quoted(key)}:${json}`;
  }
  return `{${out}}`;
}

/** An actor's whole state, its info's part written once per actor. */
export function stateJson(known: KnownActor, state: ActorState): string {
  return `{"actor":${known.json},"status":${quoted(state.status)},"states":${wordsJson(state.states)},"children":${childrenJson(state.children)}${jsonMember('context', state.context)}}`;
}

/** A change, its members in the order `SentActor` sets them (the status, the states, the children, then the context's). */
export function changeJson(change: ActorChange): string {
  // Each member but the first with its comma, rather than cutting a leading one off: a cut copies the pieces into one string.
  let out = '';
  if (change.status !== undefined) out += `"status":${quoted(change.status)}`;
  if (change.states !== undefined) out += `${out === '' ? '' : ','}"states":${wordsJson(change.states)}`;
  if (change.children !== undefined) out += `${out === '' ? '' : ','}"children":${childrenJson(change.children)}`;
  if (change.set !== undefined) out += `${out === '' ? '' : ','}"set":${setJson(change.set)}`;
  if (change.unset !== undefined) out += `${out === '' ? '' : ','}"unset":${wordsJson(change.unset)}`;
  if ('context' in change) {
    const context = jsonMember('context', change.context);
    if (context !== '') out += out === '' ? context.substring(1) : context;
  }
  return `{${out}}`;
}

/** A number as JSON writes it (`null` for one that is not finite), or the member left out as JSON.stringify would. */
export function numberMember(name: string, value: unknown): string {
  return typeof value === 'number' && Number.isFinite(value) ? `,"${name}":${value}` : jsonMember(name, value);
}
