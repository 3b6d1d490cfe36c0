import type { ChartEdge, ChartGraph, ChartLayout, ChartNode } from '../../src/inspect/chart-types.js';

/**
 * Folding: a compound state that holds no active state is drawn as one box (its name and how many
 * states it holds) until someone opens it, so a chart shows the part its actor is in at a readable
 * size, with the rest of the chart as landmarks.
 */

/** The chart's definition, as the host laid it out (positions dropped). */
export function graphOf(layout: ChartLayout): ChartGraph {
  return {
    machineId: layout.machineId,
    nodes: layout.nodes.map(({ id, key, parent, type, initial, invokes }): ChartNode => ({ id, key, parent, type, initial, invokes })),
    edges: layout.edges.map(({ id, source, target, kind, eventType, label, guard, internal, reenter }): ChartEdge => ({ id, source, target, kind, eventType, label, guard, internal, reenter })),
  };
}

/** The states entered first from the root down: what a chart shows when no actor is in it. */
export function initialPath(graph: ChartGraph): string[] {
  const path: string[] = [];
  let node = graph.nodes.find((n) => n.parent === null);
  while (node) {
    path.push(node.id);
    const parent: string = node.id;
    node = graph.nodes.find((n) => n.parent === parent && n.initial);
  }
  return path;
}

/**
 * The outermost compound states to fold: those holding none of `focus` (the shown configuration,
 * ancestors included, or the initial path) that nobody opened. The root never folds.
 */
export function foldedStates(graph: ChartGraph, focus: ReadonlySet<string>, opened: ReadonlySet<string>): Set<string> {
  const folded = new Set<string>();
  const children = childrenOf(graph);
  const visit = (id: string): void => {
    for (const child of children.get(id) ?? []) {
      if ((children.get(child.id) ?? []).length === 0) continue;
      if (!focus.has(child.id) && !opened.has(child.id)) folded.add(child.id);
      else visit(child.id);
    }
  };
  const root = graph.nodes.find((n) => n.parent === null);
  if (root) visit(root.id);
  return folded;
}

/**
 * The chart with each folded state as one box: the states inside it are gone, transitions from or to
 * them start or end at the box, and those that stay inside it are not drawn.
 */
export function foldGraph(graph: ChartGraph, folded: ReadonlySet<string>): ChartGraph {
  if (folded.size === 0) return graph;
  const parents = new Map(graph.nodes.map((n) => [n.id, n.parent]));
  /** The box a state is drawn in: itself, or its outermost folded ancestor. */
  const shownAs = (id: string): string => {
    let shown = id;
    for (let at: string | null | undefined = id; at; at = parents.get(at)) if (folded.has(at)) shown = at;
    return shown;
  };
  const inside = new Map<string, number>();
  for (const node of graph.nodes) {
    const box = shownAs(node.id);
    if (box !== node.id) inside.set(box, (inside.get(box) ?? 0) + 1);
  }
  const nodes = graph.nodes.filter((n) => shownAs(n.id) === n.id).map((n) => (folded.has(n.id) ? { ...n, folded: inside.get(n.id) ?? 0 } : n));
  const edges: ChartEdge[] = [];
  for (const edge of graph.edges) {
    const source = shownAs(edge.source);
    const target = shownAs(edge.target);
    const hidden = source !== edge.source || target !== edge.target;
    if (hidden && (edge.internal || source === target)) continue;
    edges.push(hidden ? { ...edge, source, target } : edge);
  }
  return { ...graph, nodes, edges };
}

function childrenOf(graph: ChartGraph): Map<string, ChartNode[]> {
  const children = new Map<string, ChartNode[]>();
  for (const node of graph.nodes) if (node.parent !== null) children.set(node.parent, [...(children.get(node.parent) ?? []), node]);
  return children;
}
