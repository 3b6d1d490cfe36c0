import type { ChartEdge, ChartGraph, ChartLayout, LaidOutNode, LaidOutRoute } from '../../src/inspect/chart-types.js';
import type { TakenTransition } from '../../src/inspect/stream-protocol.js';
import { foldedStates, graphOf, initialPath } from './chart-collapse.js';
import { LayoutCache } from './chart-relayout.js';
import { READABLE_SCALE, Viewport, type Box } from './chart-viewport.js';
import { h, svg } from './dom.js';
import { GuardTip } from './guard-badge.js';

const ZOOMS = ['fit', '0.5', '0.75', '1'] as const;

/**
 * `follow`: the active states' region at the readable scale, moved when they leave the view; `fit`:
 * the whole chart; `manual`: where the reader dragged or zoomed to, left alone.
 */
type Mode = 'follow' | 'fit' | 'manual';

/**
 * One chart drawn from its laid-out definition. Each state is a `<g data-state="<id>">`; the states
 * of the shown actor's active configuration get `data-active="true"`, the transitions its last
 * step took are marked `taken`. An actor that has ended keeps its last configuration as `data-last`.
 * Compound states away from the shown configuration are folded (`data-collapsed`), and the view
 * follows the active states at a scale where every label is at least 11 px.
 */
export class ChartView {
  readonly el: HTMLElement;
  private readonly svgEl: SVGSVGElement;
  private readonly body: SVGGElement;
  private readonly caption: HTMLElement;
  private readonly fitButton: HTMLButtonElement;
  private readonly followButton: HTMLButtonElement;
  private readonly zoomSelect: HTMLSelectElement;
  private readonly viewport: Viewport;
  private readonly tip: GuardTip;
  private readonly graph: ChartGraph;
  /** The definition's transitions by id, with their own source and target (a folded layout moves them to the box). */
  private readonly definition: Map<string, ChartEdge>;
  private readonly layouts: LayoutCache;
  private layout: ChartLayout;
  /** The folding drawn, and the one last asked for (a layout may still be on its way). */
  private drawnKey = '';
  private wantedKey = '';
  private nodes = new Map<string, SVGGElement>();
  /** Drawn routes, each transition's label line on its route, and the badges written instead of lines. */
  private routes = new Map<string, SVGGElement>();
  private lines = new Map<string, SVGTSpanElement>();
  private badges = new Map<string, SVGGElement>();
  private internals: { source: string; label: string; el: SVGTextElement }[] = [];
  private marked: Element[] = [];
  private readonly takenEdges = new Set<string>();
  private shown: { states: readonly string[]; taken: readonly TakenTransition[]; live: boolean } = { states: [], taken: [], live: false };
  /** Compound states the reader opened: they stay open when they hold no active state. */
  private readonly opened = new Set<string>();
  private mode: Mode = 'follow';

  constructor(layout: ChartLayout) {
    this.layout = layout;
    this.graph = graphOf(layout);
    this.definition = new Map(this.graph.edges.map((e) => [e.id, e]));
    this.layouts = new LayoutCache(this.graph, layout);
    this.svgEl = svg('svg', { class: 'chart', 'data-chart': layout.machineId, role: 'img', 'aria-label': `${layout.machineId} chart` });
    this.body = svg('g', { class: 'chart-body' });
    this.svgEl.append(arrowMarker(), this.body);
    this.viewport = new Viewport(this.svgEl);
    this.caption = h('span', { class: 'chart-caption' }, 'no actor');
    this.fitButton = h('button', { class: 'view-fit', 'data-action': 'fit', title: 'the whole chart (click again to follow the active state)', onclick: () => this.setMode(this.mode === 'fit' ? 'follow' : 'fit') }, 'fit');
    this.followButton = h('button', { class: 'view-follow', 'data-action': 'follow', title: 'the active state at a readable size', onclick: () => this.setMode('follow') }, 'follow');
    this.zoomSelect = h('select', { class: 'zoom', title: 'zoom', onchange: (e) => this.setZoom((e.target as HTMLSelectElement).value as (typeof ZOOMS)[number]) });
    for (const z of ZOOMS) this.zoomSelect.append(h('option', { value: z }, z === 'fit' ? 'fit' : `${Number(z) * 100}%`));
    const frame = h('div', { class: 'chart-viewport' }, this.svgEl);
    this.el = h(
      'section',
      { class: 'chart-panel', id: `chart-${layout.machineId}`, 'data-machine': layout.machineId },
      h('header', {}, h('strong', {}, layout.machineId), this.caption, h('span', { class: 'view-controls' }, this.followButton, this.fitButton, this.zoomSelect)),
      frame,
    );
    this.tip = new GuardTip(this.el);
    this.el.append(this.tip.el);
    this.draw(layout, '');
    this.listen();
    // A hidden panel has no size: the view is placed when it gets one, and again whenever it changes.
    new ResizeObserver(() => this.place(true)).observe(this.svgEl);
    this.refold();
  }

  /** Shows an actor's configuration; `live` false draws it as ended. */
  show(states: readonly string[], taken: readonly TakenTransition[], live: boolean, caption: string): void {
    this.shown = { states, taken, live };
    this.el.classList.toggle('ended', !live && states.length > 0);
    this.el.classList.toggle('empty', states.length === 0);
    this.caption.textContent = caption;
    this.refold();
  }

  /** Folds what holds no shown state, lays the chart out again if that changed, then marks and places. */
  private refold(): void {
    const focus = new Set(this.shown.states.length ? this.shown.states : initialPath(this.graph));
    const folded = foldedStates(this.graph, focus, this.opened);
    const key = LayoutCache.key(folded);
    this.wantedKey = key;
    const redraw = key !== this.drawnKey;
    if (redraw) {
      const next = this.layouts.get(folded);
      if (next instanceof Promise) {
        this.el.dataset.layout = 'pending';
        next.then(
          (layout) => {
            if (this.wantedKey !== key) return;
            this.draw(layout, key);
            this.mark();
            this.place(true);
          },
          () => {
            if (this.wantedKey === key) this.el.dataset.layout = 'failed';
          },
        );
      } else this.draw(next, key);
    } else this.el.dataset.layout = layoutName(key);
    this.mark();
    this.place(redraw && key === this.drawnKey);
  }

  private draw(layout: ChartLayout, key: string): void {
    this.layout = layout;
    this.drawnKey = key;
    this.el.dataset.layout = layoutName(key);
    this.nodes = new Map();
    this.routes = new Map();
    this.lines = new Map();
    this.badges = new Map();
    this.internals = [];
    this.marked = [];
    this.tip.close();
    const depth = (n: LaidOutNode): number => (n.parent === null ? 0 : n.id.split('.').length);
    const drawn: SVGGElement[] = [];
    for (const node of [...layout.nodes].sort((a, b) => depth(a) - depth(b))) drawn.push(this.drawNode(node));
    for (const route of layout.routes) if (route.points.length >= 2) drawn.push(this.drawRoute(route));
    this.body.replaceChildren(...drawn);
    this.viewport.setChart({ x: 0, y: 0, width: layout.width, height: layout.height });
  }

  private mark(): void {
    for (const el of this.marked) {
      el.removeAttribute('data-active');
      el.removeAttribute('data-last');
      el.classList.remove('taken');
    }
    this.marked = [];
    this.takenEdges.clear();
    const { states, taken, live } = this.shown;
    const attr = live ? 'data-active' : 'data-last';
    for (const id of states) {
      const el = this.nodes.get(id);
      if (!el) continue;
      el.setAttribute(attr, 'true');
      this.marked.push(el);
    }
    if (live) this.markTaken(taken);
  }

  private markTaken(taken: readonly TakenTransition[]): void {
    const routeOf = new Map(this.layout.edges.map((e) => [e.id, e.route]));
    for (const t of taken) {
      if (t.targets.length === 0) {
        for (const i of this.internals) {
          if (i.source !== t.source || !labelMatches(i.label, t.eventType)) continue;
          i.el.classList.add('taken');
          this.marked.push(i.el);
        }
        continue;
      }
      for (const edge of this.definition.values()) {
        const route = routeOf.get(edge.id);
        if (!route || edge.source !== t.source || edge.eventType !== t.eventType || !t.targets.includes(edge.target)) continue;
        this.takenEdges.add(edge.id);
        for (const el of [this.routes.get(route), this.lines.get(edge.id), this.badges.get(route)]) {
          if (!el) continue;
          el.classList.add('taken');
          this.marked.push(el);
        }
      }
    }
  }

  private setMode(mode: Mode): void {
    this.mode = mode;
    this.place(true);
  }

  private setZoom(zoom: (typeof ZOOMS)[number]): void {
    if (zoom === 'fit') return this.setMode('fit');
    this.mode = 'manual';
    this.viewport.zoomTo(Number(zoom));
    this.syncControls();
  }

  /**
   * Puts the view where the mode wants it. Following, it moves only when the active states are out
   * of view or the scale is not the readable one (`force`: the layout or the panel changed).
   */
  private place(force: boolean): void {
    if (this.viewport.visible) {
      if (this.mode === 'fit') this.viewport.fit();
      else if (this.mode === 'follow') {
        const focus = this.focusBox();
        if (force || !this.viewport.contains(focus) || Math.abs(this.viewport.scale - READABLE_SCALE) > 0.01) this.viewport.showAround(focus, READABLE_SCALE);
      }
    }
    this.syncControls();
  }

  /**
   * The region to show: the deepest shown states (the initial ones when none is), widened to the
   * largest state around them that still fits the panel at the readable scale, for their neighbours.
   */
  private focusBox(): Box {
    const boxes = new Map(this.layout.nodes.map((n) => [n.id, n]));
    const wanted = (this.shown.states.length ? this.shown.states : initialPath(this.graph)).filter((id) => boxes.has(id));
    const leaves = wanted.filter((id) => !wanted.some((o) => o.startsWith(`${id}.`)));
    if (leaves.length === 0) return { x: 0, y: 0, width: this.layout.width, height: this.layout.height };
    let region = union(leaves.map((id) => boxes.get(id)!));
    const room = this.viewport.room(READABLE_SCALE);
    for (let parent = boxes.get(leaves[0]!)?.parent; parent; parent = boxes.get(parent)?.parent) {
      const wider = union([region, boxes.get(parent)!]);
      if (wider.width > room.width || wider.height > room.height) break;
      region = wider;
    }
    return region;
  }

  private syncControls(): void {
    this.el.dataset.view = this.mode;
    this.fitButton.setAttribute('aria-pressed', String(this.mode === 'fit'));
    this.followButton.setAttribute('aria-pressed', String(this.mode === 'follow'));
    if (this.mode === 'fit') this.zoomSelect.value = 'fit';
    else if (this.mode === 'follow') this.zoomSelect.value = String(READABLE_SCALE);
  }

  /** Drag to pan, wheel to pan, Ctrl/⌘ + wheel to zoom: each leaves the view where the reader put it. */
  private listen(): void {
    let drag: { x: number; y: number; moved: boolean } | null = null;
    this.svgEl.addEventListener('pointerdown', (e) => {
      if (e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, moved: false };
    });
    this.svgEl.addEventListener('pointermove', (e) => {
      if (!drag || (e.buttons & 1) === 0) return;
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < 4) return;
      if (!drag.moved) this.svgEl.setPointerCapture(e.pointerId);
      drag = { x: e.clientX, y: e.clientY, moved: true };
      this.mode = 'manual';
      this.viewport.panBy(dx, dy);
      this.syncControls();
    });
    this.svgEl.addEventListener('pointerup', () => {
      // A drag is not a click on the state it ends over.
      if (drag?.moved) this.svgEl.addEventListener('click', (e) => e.stopPropagation(), { capture: true, once: true });
      drag = null;
    });
    // Tabbing to a badge or a folded state out of view brings it into view.
    this.svgEl.addEventListener('focusin', (e) => {
      const target = e.target as SVGGraphicsElement;
      if (!(target instanceof SVGGraphicsElement) || target === this.svgEl) return;
      const box = target.getBBox();
      if (this.viewport.contains(box)) return;
      this.mode = 'manual';
      this.viewport.showAround(box, this.viewport.scale);
      this.syncControls();
    });
    this.svgEl.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        this.mode = 'manual';
        if (e.ctrlKey || e.metaKey) {
          const at = this.svgEl.getBoundingClientRect();
          this.viewport.zoomTo(this.viewport.scale * Math.exp(-e.deltaY / 300), e.clientX - at.left, e.clientY - at.top);
        } else this.viewport.panBy(-e.deltaX, -e.deltaY);
        this.syncControls();
      },
      { passive: false },
    );
  }

  /** Opens a folded state, or folds again one the reader opened. */
  private toggle(id: string, open: boolean): void {
    if (open) this.opened.add(id);
    else for (const o of [...this.opened]) if (o === id || o.startsWith(`${id}.`)) this.opened.delete(o);
    this.refold();
  }

  private drawNode(node: LaidOutNode): SVGGElement {
    const folded = node.folded !== undefined;
    const g = svg('g', { 'data-state': node.id, class: `state ${node.type}${node.parent === null ? ' root' : ''}${folded ? ' folded' : ''}` });
    g.append(svg('title', {}, `${node.id}${node.invokes.length ? `\ninvokes ${node.invokes.join(', ')}` : ''}${folded ? '\nclick to open' : ''}`));
    g.append(svg('rect', { x: node.x, y: node.y, width: node.width, height: node.height, rx: 8 }));
    if (node.type === 'final') g.append(svg('rect', { class: 'inner', x: node.x + 3, y: node.y + 3, width: node.width - 6, height: node.height - 6, rx: 6 }));
    const label = node.parent === null ? node.id : node.key;
    g.append(svg('text', { class: 'state-label', x: node.x + 10, y: node.y + 19 }, node.type === 'parallel' ? `${label} ∥` : label));
    if (node.invokes.length) g.append(svg('text', { class: 'invoke', x: node.x + node.width - 8, y: node.y + 19, 'text-anchor': 'end' }, `⟳ ${node.invokes.join(', ')}`));
    node.internal.forEach((line, i) => {
      const text = svg('text', { class: 'internal', x: node.x + 10, y: node.y + 36 + i * 15 }, line);
      this.internals.push({ source: node.id, label: line, el: text });
      g.append(text);
    });
    if (folded) {
      const count = node.folded ?? 0;
      g.append(svg('text', { class: 'folded-count', x: node.x + 10, y: node.y + 36 + node.internal.length * 15 }, `⊕ +${count} state${count === 1 ? '' : 's'}`));
      Object.entries({ 'data-collapsed': 'true', tabindex: '0', role: 'button', 'aria-expanded': 'false', 'aria-label': `${node.key}: ${count} states folded, open` }).forEach(([k, v]) => g.setAttribute(k, v));
      g.addEventListener('click', () => this.toggle(node.id, true));
      g.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), this.toggle(node.id, true)));
    } else if (this.opened.has(node.id)) {
      const fold = svg('text', { class: 'fold-toggle', x: node.x + node.width - 8, y: node.y + 19 + (node.invokes.length ? 15 : 0), 'text-anchor': 'end', tabindex: '0', role: 'button', 'data-fold': node.id }, '⊖ fold');
      fold.addEventListener('click', () => this.toggle(node.id, false));
      fold.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), this.toggle(node.id, false)));
      g.append(fold);
    }
    if (node.initial) g.append(svg('circle', { class: 'initial', cx: node.x - 2, cy: node.y - 2, r: 4 }));
    this.nodes.set(node.id, g);
    return g;
  }

  private drawRoute(route: LaidOutRoute): SVGGElement {
    const d = route.points.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
    const g = svg('g', { class: `edge ${route.kind}`, 'data-edge': route.id, 'data-source': route.source, 'data-target': route.target });
    g.append(svg('path', { d, 'marker-end': 'url(#arrow)' }));
    if (route.labelBox && route.badge !== null) {
      this.badges.set(route.id, this.tip.badge(route, g, `guard-tip-${this.layout.machineId}`, () => this.takenEdges));
    } else if (route.labelBox) {
      const { x, y, width, height } = route.labelBox;
      g.append(svg('rect', { class: 'edge-label-bg', x, y, width, height, rx: 3 }));
      const text = svg('text', { class: 'edge-label', x: x + 3, y });
      route.members.forEach((m, i) => {
        const line = svg('tspan', { x: x + 3, y: y + 12 + i * 15, 'data-transition': m.edge }, m.label);
        this.lines.set(m.edge, line);
        text.append(line);
      });
      g.append(text);
    }
    this.routes.set(route.id, g);
    return g;
  }
}

/** What `data-layout` says of the drawn folding (`pending` while ELK works on the next one). */
function layoutName(key: string): string {
  return key === '' ? 'unfolded' : `folded:${key}`;
}

function union(boxes: readonly Box[]): Box {
  const x = Math.min(...boxes.map((b) => b.x));
  const y = Math.min(...boxes.map((b) => b.y));
  return { x, y, width: Math.max(...boxes.map((b) => b.x + b.width)) - x, height: Math.max(...boxes.map((b) => b.y + b.height)) - y };
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
