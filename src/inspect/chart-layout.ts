import type { ELK, ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';
import type { AnyStateMachine } from 'xstate';
import { sessionMachine } from '../../machines/session.machine.js';
import { stallWatchdogMachine } from '../../machines/stall-watchdog.machine.js';
import { toolCallMachine } from '../../machines/tool-call.machine.js';
import { turnMachine } from '../../machines/turn.machine.js';
import { chartGraph } from './chart-graph.js';
import type { ChartEdge, ChartGraph, ChartLayout, ChartNode, LaidOutEdge, LaidOutRoute } from './chart-types.js';

export type { ChartLayout };

/**
 * ELK, loaded on first use: it is 1.5 MB of JavaScript that a host whose page is never opened
 * should not parse at startup. elkjs is CommonJS: its constructor is `module.exports`, which
 * TypeScript types as the module.
 */
async function loadElk(): Promise<ELK> {
  const module = (await import('elkjs/lib/elk.bundled.js')) as { default?: unknown };
  const Elk = ((module.default as { default?: unknown } | undefined)?.default ?? module.default ?? module) as new () => ELK;
  return new Elk();
}

/** The charts whose actors a session runs. */
const CHARTS: readonly AnyStateMachine[] = [sessionMachine, turnMachine, toolCallMachine, stallWatchdogMachine];

// Text metrics the page draws with (12px system sans-serif, 11px for edge and internal labels).
const CHAR = 7;
const SMALL_CHAR = 6;
const LINE = 14;
const HEADER = 26;

/**
 * Lays a chart out with ELK's layered algorithm, states nested as compound nodes. Done on the
 * server, once per chart per process: the charts never change while the host runs, every page gets
 * the same picture, and the browser bundle does not carry ELK (about 1.5 MB).
 */
async function layoutChart(graph: ChartGraph): Promise<ChartLayout> {
  const internal = new Map<string, string[]>();
  for (const edge of graph.edges) if (edge.internal) internal.set(edge.source, [...(internal.get(edge.source) ?? []), edge.label]);
  const children = new Map<string | null, ChartNode[]>();
  for (const node of graph.nodes) children.set(node.parent, [...(children.get(node.parent) ?? []), node]);
  const elkNode = (node: ChartNode): ElkNode => {
    const lines = internal.get(node.id) ?? [];
    const kids = children.get(node.id) ?? [];
    const textWidth = Math.max(node.key.length * CHAR + 24, ...lines.map((l) => l.length * SMALL_CHAR + 16));
    const top = HEADER + lines.length * LINE;
    if (kids.length === 0) return { id: node.id, width: Math.max(textWidth, 90), height: top + 8 };
    return {
      id: node.id,
      layoutOptions: { 'elk.padding': `[top=${top + 10},left=14,bottom=14,right=14]`, 'elk.nodeSize.constraints': 'MINIMUM_SIZE' },
      width: textWidth,
      height: top + 20,
      children: kids.map(elkNode),
    };
  };
  const routes = routesOf(graph.edges);
  const root = elkNode(graph.nodes.find((n) => n.parent === null)!);
  root.layoutOptions = {
    ...root.layoutOptions,
    'elk.algorithm': 'layered',
    'elk.direction': 'DOWN',
    'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
    'elk.layered.spacing.nodeNodeBetweenLayers': '40',
    'elk.spacing.nodeNode': '30',
    'elk.spacing.edgeLabel': '4',
    'elk.edgeLabels.inline': 'false',
    'elk.json.shapeCoords': 'ROOT',
    'elk.json.edgeCoords': 'ROOT',
  };
  root.edges = routes.map(
    (r): ElkExtendedEdge => ({
      id: r.id,
      sources: [r.source],
      targets: [r.target],
      labels: [{ text: r.members.map((m) => m.label).join('\n'), width: Math.max(...r.members.map((m) => m.label.length)) * SMALL_CHAR + 6, height: LINE * r.members.length }],
    }),
  );
  const laid = await (await loadElk()).layout(root);
  const boxes = new Map<string, ElkNode>();
  const walk = (n: ElkNode): void => {
    boxes.set(n.id, n);
    n.children?.forEach(walk);
  };
  walk(laid);
  const elkEdges = new Map((laid.edges ?? []).map((e: ElkExtendedEdge) => [e.id, e]));
  const routeOfEdge = new Map(routes.flatMap((r) => r.members.map((m) => [m.edge, r.id] as const)));
  return {
    machineId: graph.machineId,
    width: laid.width ?? 0,
    height: laid.height ?? 0,
    nodes: graph.nodes.map((node) => {
      const box = boxes.get(node.id)!;
      return { ...node, x: box.x ?? 0, y: box.y ?? 0, width: box.width ?? 0, height: box.height ?? 0, internal: internal.get(node.id) ?? [] };
    }),
    edges: graph.edges.map((edge): LaidOutEdge => ({ ...edge, route: routeOfEdge.get(edge.id) ?? null })),
    routes: routes.map((r) => placed(r, elkEdges.get(r.id))),
  };
}

type Route = Omit<LaidOutRoute, 'points' | 'labelBox'>;

/** The transitions with a target, one route per source and target. */
function routesOf(edges: readonly ChartEdge[]): Route[] {
  const routes = new Map<string, Route>();
  for (const e of edges) {
    if (e.internal) continue;
    const key = `${e.source}>${e.target}`;
    let route = routes.get(key);
    if (!route) {
      route = { id: `route:${routes.size}`, source: e.source, target: e.target, kind: e.kind, members: [] };
      routes.set(key, route);
    }
    if (route.kind !== e.kind) route.kind = 'event';
    route.members.push({ edge: e.id, label: e.label });
  }
  return [...routes.values()];
}

function placed(route: Route, laid: ElkExtendedEdge | undefined): LaidOutRoute {
  const section = laid?.sections?.[0];
  const points = section ? [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].map(({ x, y }) => ({ x, y })) : [];
  const label = laid?.labels?.[0];
  const labelBox = label ? { x: label.x ?? 0, y: label.y ?? 0, width: label.width ?? 0, height: label.height ?? 0 } : null;
  return { ...route, points, labelBox };
}

let cached: Promise<ChartLayout[]> | null = null;

/** The three charts laid out, computed on first use and kept for the life of the process. */
export function chartLayouts(): Promise<ChartLayout[]> {
  cached ??= Promise.all(CHARTS.map((machine) => layoutChart(chartGraph(machine))));
  // A failed layout is not cached: the next page asks again.
  cached.catch(() => (cached = null));
  return cached;
}
