import type { ActorChange, ActorState, StreamItem, VersionedActorState } from './stream-protocol.js';

/**
 * Applying the stream's `delta` messages: the page rebuilds each actor's state with it, and the
 * tests check it against what the host meant. No imports but types, so the page bundles nothing of
 * the host's.
 */

/** The state a change leads to; `state` itself is not changed (the page keeps every past state). */
export function applyActorChange(state: ActorState, change: ActorChange): ActorState {
  const next: ActorState = {
    actor: state.actor,
    status: change.status ?? state.status,
    states: change.states ?? state.states,
    children: change.children ?? state.children,
    context: state.context,
  };
  if ('context' in change) next.context = change.context;
  else if (change.set !== undefined || change.unset !== undefined) next.context = changedRecord(state.context, change.set ?? {}, change.unset ?? []);
  return next;
}

/**
 * A record with keys set and removed, built from entries: a key such as `__proto__` (a context may
 * hold any key) stays a key, where an assignment would change the copy's prototype.
 */
function changedRecord(base: unknown, set: Record<string, unknown>, unset: readonly string[]): Record<string, unknown> {
  const entries = new Map<string, unknown>(typeof base === 'object' && base !== null && !Array.isArray(base) ? Object.entries(base) : []);
  for (const key of unset) entries.delete(key);
  for (const [key, value] of Object.entries(set)) entries.set(key, value);
  return Object.fromEntries(entries) as Record<string, unknown>;
}

/** What a client does with one of the stream's actor messages. */
export type Applied =
  /** The actor's state at the message's version. */
  | { ok: true; state: VersionedActorState }
  /** A delta whose base the client does not hold: it missed a message, and must start the stream again. */
  | { ok: false; held: number | null };

/**
 * One actor message applied to what the client holds of the actor (`held`, or nothing): a
 * `snapshot` replaces it, a `delta` of version n applies only to version n − 1.
 */
export function applyActorMessage(held: VersionedActorState | undefined, item: Extract<StreamItem, { kind: 'snapshot' | 'delta' }>): Applied {
  if (item.kind === 'snapshot') return { ok: true, state: { version: item.version, state: item.state } };
  if (!held || held.version !== item.version - 1) return { ok: false, held: held?.version ?? null };
  return { ok: true, state: { version: item.version, state: applyActorChange(held.state, item.change) } };
}
