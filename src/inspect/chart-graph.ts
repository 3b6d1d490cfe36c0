import type { AnyStateMachine, AnyStateNode } from 'xstate';
import type { ChartEdge, ChartGraph, ChartNode, EdgeKind } from './chart-types.js';

export type { ChartEdge, ChartGraph };

/**
 * A chart's definition as nodes and edges, read from the machine's state nodes. Unlike
 * `xstate/graph`'s `toDirectedGraph`, eventless (`always`) transitions are kept, and so are the
 * transitions without a target, so that every transition of the definition appears.
 */
export function chartGraph(machine: AnyStateMachine): ChartGraph {
  const nodes: ChartNode[] = [];
  const edges: ChartEdge[] = [];
  const visit = (node: AnyStateNode, parent: AnyStateNode | null): void => {
    nodes.push(nodeOf(node, parent));
    for (const [eventType, transitions] of node.transitions) transitions.forEach((t, i) => edges.push(...edgesOf(node, eventType, t, i)));
    (node.always ?? []).forEach((t, i) => edges.push(...edgesOf(node, '', t, i)));
    for (const child of Object.values(node.states)) visit(child, node);
  };
  visit(machine.root, null);
  return { machineId: machine.id, nodes, edges };
}

function nodeOf(node: AnyStateNode, parent: AnyStateNode | null): ChartNode {
  const initialIds = parent?.initial?.target.map((t) => t.id) ?? [];
  return {
    id: node.id,
    key: node.key,
    parent: parent?.id ?? null,
    type: node.type,
    initial: parent !== null && (initialIds.includes(node.id) || parent.type === 'parallel'),
    invokes: node.invoke.map((i) => (typeof i.src === 'string' ? i.src : i.id)),
  };
}

interface TransitionLike {
  target?: readonly AnyStateNode[] | undefined;
  guard?: unknown;
  reenter?: boolean;
}

function edgesOf(node: AnyStateNode, eventType: string, transition: TransitionLike, index: number): ChartEdge[] {
  const kind = kindOf(eventType);
  const guard = guardName(transition.guard);
  const label = guard ? `${eventLabel(kind, eventType)} [${guard}]` : eventLabel(kind, eventType);
  const targets = transition.target?.map((t) => t.id) ?? [];
  const base = { source: node.id, kind, eventType, label, guard, reenter: transition.reenter === true };
  if (targets.length === 0) return [{ ...base, id: `${node.id}:${eventType}:${index}`, target: node.id, internal: true }];
  return targets.map((target, j) => ({ ...base, id: `${node.id}:${eventType}:${index}:${j}`, target, internal: false }));
}

function kindOf(eventType: string): EdgeKind {
  if (eventType === '') return 'always';
  if (eventType.startsWith('xstate.done.actor.')) return 'done';
  if (eventType.startsWith('xstate.error.actor.')) return 'error';
  if (eventType.startsWith('xstate.after.')) return 'after';
  return 'event';
}

function eventLabel(kind: EdgeKind, eventType: string): string {
  switch (kind) {
    case 'always':
      return 'always';
    case 'done':
      return `done: ${eventType.slice('xstate.done.actor.'.length)}`;
    case 'error':
      return `error: ${eventType.slice('xstate.error.actor.'.length)}`;
    case 'after':
      // xstate.after.<delay>.<state id>: the delay's name or milliseconds.
      return `after ${eventType.split('.')[2] ?? ''}`;
    default:
      return eventType;
  }
}

/** A guard's name: a named guard, a combinator of named guards (`and(a, b)`), or `inline` for an anonymous function. */
function guardName(guard: unknown): string | null {
  if (guard === undefined || guard === null) return null;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string') return (guard as { type: string }).type;
  if (typeof guard === 'function') {
    const parts = (guard as { guards?: unknown }).guards;
    if (Array.isArray(parts)) {
      const check = ((guard as { check?: { name?: string } }).check?.name ?? '').replace(/^check/, '').toLowerCase() || 'guard';
      return `${check}(${parts.map((p) => guardName(p) ?? '?').join(', ')})`;
    }
    const name = (guard as { name?: string }).name;
    return name && name !== 'guard' ? name : 'inline';
  }
  return 'inline';
}
