import type { ChartLayout, LaidOutNode, LaidOutRoute } from '../../src/inspect/chart-types.js';
import type { TakenTransition } from '../../src/inspect/stream-protocol.js';
import { h, svg } from './dom.js';

const ZOOMS = ['fit', '0.5', '0.75', '1'] as const;

/**
 * One chart drawn from its laid-out definition. Each state is a `<g data-state="<id>">`; the states
 * of the shown actor's active configuration get `data-active="true"`, the transitions its last
 * step took are marked `taken`. An actor that has ended keeps its last configuration as `data-last`.
 */
export class ChartView {
  readonly el: HTMLElement;
  private readonly svgEl: SVGSVGElement;
  private readonly caption: HTMLElement;
  private readonly nodes = new Map<string, SVGGElement>();
  /** Drawn routes, and each transition's label line on its route. */
  private readonly routes = new Map<string, SVGGElement>();
  private readonly lines = new Map<string, SVGTSpanElement>();
  private readonly internals: { source: string; label: string; el: SVGTextElement }[] = [];
  private marked: Element[] = [];
  private zoom: (typeof ZOOMS)[number] = 'fit';

  constructor(readonly layout: ChartLayout) {
    this.svgEl = svg('svg', { viewBox: `-10 -10 ${layout.width + 20} ${layout.height + 20}`, class: 'chart', 'data-chart': layout.machineId, role: 'img' });
    this.svgEl.append(arrowMarker());
    const depth = (n: LaidOutNode): number => (n.parent === null ? 0 : n.id.split('.').length);
    for (const node of [...layout.nodes].sort((a, b) => depth(a) - depth(b))) this.svgEl.append(this.drawNode(node));
    for (const route of layout.routes) if (route.points.length >= 2) this.svgEl.append(this.drawRoute(route));
    this.caption = h('span', { class: 'chart-caption' }, 'no actor');
    const zoom = h('select', { class: 'zoom', title: 'zoom', onchange: (e) => this.setZoom((e.target as HTMLSelectElement).value as (typeof ZOOMS)[number]) });
    for (const z of ZOOMS) zoom.append(h('option', { value: z }, z === 'fit' ? 'fit' : `${Number(z) * 100}%`));
    this.el = h(
      'section',
      { class: 'chart-panel', id: `chart-${layout.machineId}`, 'data-machine': layout.machineId },
      h('header', {}, h('strong', {}, layout.machineId), this.caption, zoom),
      h('div', { class: 'chart-scroll' }, this.svgEl),
    );
    this.setZoom('fit');
  }

  /** Shows an actor's configuration; `live` false draws it as ended. */
  show(states: readonly string[], taken: readonly TakenTransition[], live: boolean, caption: string): void {
    for (const el of this.marked) {
      el.removeAttribute('data-active');
      el.removeAttribute('data-last');
      el.classList.remove('taken');
    }
    this.marked = [];
    const attr = live ? 'data-active' : 'data-last';
    for (const id of states) {
      const el = this.nodes.get(id);
      if (!el) continue;
      el.setAttribute(attr, 'true');
      this.marked.push(el);
    }
    if (live) this.markTaken(taken);
    this.el.classList.toggle('ended', !live && states.length > 0);
    this.el.classList.toggle('empty', states.length === 0);
    this.caption.textContent = caption;
  }

  private markTaken(taken: readonly TakenTransition[]): void {
    for (const t of taken) {
      if (t.targets.length === 0) {
        for (const i of this.internals) {
          if (i.source !== t.source || !labelMatches(i.label, t.eventType)) continue;
          i.el.classList.add('taken');
          this.marked.push(i.el);
        }
        continue;
      }
      for (const edge of this.layout.edges) {
        if (edge.route === null || edge.source !== t.source || edge.eventType !== t.eventType || !t.targets.includes(edge.target)) continue;
        for (const el of [this.routes.get(edge.route), this.lines.get(edge.id)]) {
          if (!el) continue;
          el.classList.add('taken');
          this.marked.push(el);
        }
      }
    }
  }

  private setZoom(zoom: (typeof ZOOMS)[number]): void {
    this.zoom = zoom;
    if (zoom === 'fit') {
      this.svgEl.setAttribute('width', '100%');
      this.svgEl.removeAttribute('height');
    } else {
      this.svgEl.setAttribute('width', String(Math.round((this.layout.width + 20) * Number(zoom))));
      this.svgEl.setAttribute('height', String(Math.round((this.layout.height + 20) * Number(zoom))));
    }
  }

  private drawNode(node: LaidOutNode): SVGGElement {
    const g = svg('g', { 'data-state': node.id, class: `state ${node.type}${node.parent === null ? ' root' : ''}` });
    g.append(svg('title', {}, `${node.id}${node.invokes.length ? `\ninvokes ${node.invokes.join(', ')}` : ''}`));
    g.append(svg('rect', { x: node.x, y: node.y, width: node.width, height: node.height, rx: 8 }));
    if (node.type === 'final') g.append(svg('rect', { class: 'inner', x: node.x + 3, y: node.y + 3, width: node.width - 6, height: node.height - 6, rx: 6 }));
    const label = node.parent === null ? node.id : node.key;
    g.append(svg('text', { class: 'state-label', x: node.x + 10, y: node.y + 17 }, node.type === 'parallel' ? `${label} ∥` : label));
    if (node.invokes.length) g.append(svg('text', { class: 'invoke', x: node.x + node.width - 8, y: node.y + 17, 'text-anchor': 'end' }, `⟳ ${node.invokes.join(', ')}`));
    node.internal.forEach((line, i) => {
      const text = svg('text', { class: 'internal', x: node.x + 10, y: node.y + 32 + i * 14 }, line);
      this.internals.push({ source: node.id, label: line, el: text });
      g.append(text);
    });
    if (node.initial) g.append(svg('circle', { class: 'initial', cx: node.x - 2, cy: node.y - 2, r: 4 }));
    this.nodes.set(node.id, g);
    return g;
  }

  private drawRoute(route: LaidOutRoute): SVGGElement {
    const d = route.points.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
    const g = svg('g', { class: `edge ${route.kind}`, 'data-edge': route.id, 'data-source': route.source, 'data-target': route.target });
    g.append(svg('path', { d, 'marker-end': 'url(#arrow)' }));
    if (route.labelBox) {
      const { x, y, width, height } = route.labelBox;
      g.append(svg('rect', { class: 'edge-label-bg', x, y, width, height, rx: 3 }));
      const text = svg('text', { class: 'edge-label', x: x + 3, y });
      route.members.forEach((m, i) => {
        const line = svg('tspan', { x: x + 3, y: y + 11 + i * 14, 'data-transition': m.edge }, m.label);
        this.lines.set(m.edge, line);
        text.append(line);
      });
      g.append(text);
    }
    this.routes.set(route.id, g);
    return g;
  }
}

/** An internal transition's label starts with its event ('always', 'done: x', or the event type). */
function labelMatches(label: string, eventType: string): boolean {
  if (eventType === '') return label.startsWith('always');
  return label === eventType || label.startsWith(`${eventType} [`) || label.startsWith(`${eventType} `);
}

function arrowMarker(): SVGDefsElement {
  return svg(
    'defs',
    {},
    svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, svg('path', { d: 'M0,0 L10,5 L0,10 z' })),
    svg('marker', { id: 'arrow-taken', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' }, svg('path', { d: 'M0,0 L10,5 L0,10 z' })),
  );
}
