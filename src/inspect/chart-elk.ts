import type { ELK, ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';
import { routeBadge } from './chart-badge.js';
import type { ChartEdge, ChartGraph, ChartLayout, ChartNode, LaidOutEdge, LaidOutRoute } from './chart-types.js';

// Text metrics the page draws with (13px bold system sans-serif for state names, 11px for the rest):
// the page keeps every label at 11 px or more at its readable scale (1:1).
const CHAR = 8.5;
const SMALL_CHAR = 6.5;
const LINE = 15;
const HEADER = 28;

/**
 * Lays a chart out with ELK's layered algorithm, states nested as compound nodes. Pure, so that the
 * host (the charts as defined, once per process) and the page (a chart with some compound states
 * folded into one box, laid out again as the active state moves) draw with the same rules.
 */
export async function layoutGraph(elk: ELK, graph: ChartGraph): Promise<ChartLayout> {
  const internal = new Map<string, string[]>();
  for (const edge of graph.edges) if (edge.internal) internal.set(edge.source, [...(internal.get(edge.source) ?? []), edge.label]);
  const children = new Map<string | null, ChartNode[]>();
  for (const node of graph.nodes) children.set(node.parent, [...(children.get(node.parent) ?? []), node]);
  const elkNode = (node: ChartNode): ElkNode => {
    const lines = internal.get(node.id) ?? [];
    const kids = children.get(node.id) ?? [];
    const invokes = node.invokes.length ? `⟳ ${node.invokes.join(', ')}`.length * SMALL_CHAR + 16 : 0;
    const textWidth = Math.max(node.key.length * CHAR + 28 + invokes, ...lines.map((l) => l.length * SMALL_CHAR + 16));
    const top = HEADER + lines.length * LINE;
    // A folded compound state is one box: its name, and how many states it holds.
    if (node.folded !== undefined) return { id: node.id, width: Math.max(textWidth + 16, 120), height: top + LINE + 8 };
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
  root.edges = routes.map((r): ElkExtendedEdge => ({ id: r.id, sources: [r.source], targets: [r.target], labels: [labelSize(r)] }));
  const laid = await elk.layout(root);
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

/** A route's label: one line per member, or its badge. */
function labelSize(route: Route): { text: string; width: number; height: number } {
  if (route.badge !== null) return { text: route.badge, width: route.badge.length * SMALL_CHAR + 16, height: LINE + 4 };
  return { text: route.members.map((m) => m.label).join('\n'), width: Math.max(...route.members.map((m) => m.label.length)) * SMALL_CHAR + 6, height: LINE * route.members.length };
}

/** The transitions with a target, one route per source and target. */
function routesOf(edges: readonly ChartEdge[]): Route[] {
  const routes = new Map<string, Route>();
  for (const e of edges) {
    if (e.internal) continue;
    const key = `${e.source}>${e.target}`;
    let route = routes.get(key);
    if (!route) {
      route = { id: `route:${routes.size}`, source: e.source, target: e.target, kind: e.kind, members: [], badge: null };
      routes.set(key, route);
    }
    if (route.kind !== e.kind) route.kind = 'event';
    route.members.push({ edge: e.id, label: e.label });
  }
  for (const route of routes.values()) route.badge = routeBadge(route.members.map((m) => m.label));
  return [...routes.values()];
}

function placed(route: Route, laid: ElkExtendedEdge | undefined): LaidOutRoute {
  const section = laid?.sections?.[0];
  const points = section ? [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].map(({ x, y }) => ({ x, y })) : [];
  const label = laid?.labels?.[0];
  const labelBox = label ? { x: label.x ?? 0, y: label.y ?? 0, width: label.width ?? 0, height: label.height ?? 0 } : null;
  return { ...route, points, labelBox };
}
