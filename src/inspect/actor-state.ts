import type { AnyActorRef, StateValue } from 'xstate';
import type { ActorInfo, ActorState, TakenTransition, VersionedActorState } from './stream-protocol.js';
import { sanitize } from './sanitize.js';

interface ActorInternals {
  sessionId: string;
  id: string;
  _parent?: { sessionId: string };
  logic?: { id?: unknown; root?: unknown };
}

/** Who an actor is: its system id, its parent, its name and the chart it runs. */
export function actorInfo(ref: AnyActorRef): ActorInfo {
  const internals = ref as unknown as ActorInternals;
  const logic = internals.logic;
  const machineId = logic && typeof logic.id === 'string' && logic.root !== undefined ? logic.id : null;
  // A root actor has no id of its own (XState gives it its system id): it is named after its chart.
  const name = internals.id === internals.sessionId && machineId !== null ? machineId : internals.id;
  return { actorId: internals.sessionId, parentId: internals._parent?.sessionId ?? null, name, machineId };
}

/** The active state ids of a state value, ancestors included: `turn`, `turn.running_tools`, … */
export function activeStateIds(machineId: string, value: StateValue): string[] {
  const ids = [machineId];
  const walk = (prefix: string, v: StateValue): void => {
    if (typeof v === 'string') {
      ids.push(`${prefix}.${v}`);
      return;
    }
    for (const [key, sub] of Object.entries(v)) {
      ids.push(`${prefix}.${key}`);
      if (sub !== undefined) walk(`${prefix}.${key}`, sub);
    }
  };
  walk(machineId, value);
  return ids;
}

export interface SnapshotLike {
  status?: unknown;
  value?: unknown;
  context?: unknown;
  children?: Record<string, AnyActorRef | undefined>;
  /** XState's active state nodes, carried from one snapshot to the next by reference while they stay the same. */
  _nodes?: unknown;
}

/** Sanitized contexts by context object: a transition without `assign` keeps the same context, so most snapshots reuse one copy. */
const sanitizedContexts = new WeakMap<object, unknown>();

export function sanitizedContext(context: unknown): unknown {
  if (typeof context !== 'object' || context === null) return sanitize(context);
  let copy = sanitizedContexts.get(context);
  if (copy === undefined) {
    copy = sanitize(context);
    sanitizedContexts.set(context, copy);
  }
  return copy;
}

/** An actor's state from one of its snapshots, ready to leave the host. */
export function actorState(info: ActorInfo, snapshot: unknown): ActorState {
  const s = (snapshot ?? {}) as SnapshotLike;
  return { ...stateParts(info, s), context: info.machineId !== null ? sanitizedContext(s.context) : null };
}

/** An actor's state but its context. */
export function stateParts(info: ActorInfo, s: SnapshotLike): Omit<ActorState, 'context'> {
  return { actor: info, status: typeof s.status === 'string' ? s.status : 'active', states: activeStates(info, s), children: childIds(s) };
}

/** A snapshot's active state ids (see `activeStateIds`); none for an actor that is not a state machine. */
export function activeStates(info: ActorInfo, s: SnapshotLike): string[] {
  const value = s.value as StateValue | undefined;
  return info.machineId !== null && value !== undefined ? statesOf(info.machineId, value, s._nodes) : [];
}

/** A snapshot's children: name → actor id. */
export function childIds(s: SnapshotLike): Record<string, string> {
  const children: Record<string, string> = {};
  for (const [name, child] of Object.entries(s.children ?? {})) if (child) children[name] = (child as unknown as ActorInternals).sessionId;
  return children;
}

/** Configurations met, by their state nodes in order: a trie of XState's own node objects, one level per node. */
interface Configuration {
  next: WeakMap<object, Configuration>;
  states?: string[];
}

const configurations = new WeakMap<object, Configuration>();

/**
 * The active state ids of a snapshot. A chart moves among a few configurations, and XState's
 * snapshot value (from which the ids are spelled) is a function of its nodes (`_nodes`, the chart's
 * own state node objects): the ids of a configuration met before are the same list, already spelled
 * (shared: read only).
 */
function statesOf(machineId: string, value: StateValue, nodes: unknown): string[] {
  if (!Array.isArray(nodes) || nodes.length === 0) return activeStateIds(machineId, value);
  let level = configurations;
  let configuration: Configuration | undefined;
  for (const node of nodes as unknown[]) {
    if (typeof node !== 'object' || node === null) return activeStateIds(machineId, value);
    configuration = level.get(node);
    if (configuration === undefined) level.set(node, (configuration = { next: new WeakMap() }));
    level = configuration.next;
  }
  return (configuration!.states ??= activeStateIds(machineId, value));
}

/**
 * Every actor of a system as it stands now, root first, parents before children, each with the
 * version of the newest message a stream sent of it (`versionOf`; 0 for none): that message's state
 * is the actor's now, as a stream converts every step before a page joins it.
 */
export function currentActors(root: AnyActorRef, versionOf: (ref: AnyActorRef) => number = () => 0): VersionedActorState[] {
  const out: VersionedActorState[] = [];
  const walk = (ref: AnyActorRef): void => {
    out.push({ version: versionOf(ref), state: actorState(actorInfo(ref), ref.getSnapshot()) });
    const children = (ref.getSnapshot() as SnapshotLike).children ?? {};
    for (const child of Object.values(children)) if (child) walk(child);
  };
  walk(root);
  return out;
}

interface TransitionLike {
  source?: { id?: string };
  target?: readonly { id: string }[];
  eventType?: string;
}

/** A transition of a microstep, by state id. */
export function takenTransition(transition: unknown): TakenTransition {
  const tr = transition as TransitionLike;
  return { source: tr.source?.id ?? '', targets: tr.target?.map((x) => x.id) ?? [], eventType: tr.eventType ?? '' };
}
