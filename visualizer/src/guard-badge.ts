import type { LaidOutRoute } from '../../src/inspect/chart-types.js';
import { fill, h, svg } from './dom.js';

/**
 * An arrow whose transitions are too many or too long to write out carries a badge (chart-badge.ts
 * decides which); the full list opens on hover or keyboard focus, in one tooltip per chart that sits
 * over the SVG, so it is drawn at the page's size whatever the chart's zoom.
 */
export class GuardTip {
  readonly el: HTMLElement;
  private readonly list: HTMLElement;

  constructor(private readonly container: HTMLElement) {
    this.list = h('ul', {});
    this.el = h('div', { class: 'guard-tip', role: 'tooltip', hidden: true }, this.list);
  }

  /** Draws a route's badge into its group and returns the element marked when the route is taken. */
  badge(route: LaidOutRoute, group: SVGGElement, id: string, taken: () => ReadonlySet<string>): SVGGElement {
    const { x, y, width, height } = route.labelBox!;
    const badge = svg('g', { class: 'guard-badge', tabindex: 0, role: 'button', 'data-badge': route.id, 'aria-describedby': id, 'aria-label': `${route.badge}: ${route.members.map((m) => m.label).join('; ')}` });
    badge.append(svg('rect', { x, y, width, height, rx: height / 2 }), svg('text', { class: 'badge-label', x: x + width / 2, y: y + height / 2 + 4, 'text-anchor': 'middle' }, route.badge!));
    const open = (): void => this.open(badge, route, id, taken());
    badge.addEventListener('mouseenter', open);
    badge.addEventListener('focus', open);
    // Open while the pointer is over the badge or it has the focus.
    badge.addEventListener('mouseleave', () => document.activeElement !== badge && this.close());
    badge.addEventListener('blur', () => !badge.matches(':hover') && this.close());
    badge.addEventListener('keydown', (e) => e.key === 'Escape' && this.close());
    group.append(badge);
    return badge;
  }

  private open(badge: SVGGElement, route: LaidOutRoute, id: string, taken: ReadonlySet<string>): void {
    fill(this.list, ...route.members.map((m) => h('li', { class: taken.has(m.edge) ? 'taken' : undefined, 'data-transition': m.edge }, m.label)));
    this.el.id = id;
    this.el.dataset.for = route.id;
    this.el.hidden = false;
    const at = badge.getBoundingClientRect();
    const box = this.container.getBoundingClientRect();
    // Below the badge, moved left as far as needed to stay inside the panel.
    const left = Math.max(0, Math.min(at.left - box.left, box.width - this.el.offsetWidth - 4));
    this.el.style.left = `${left}px`;
    this.el.style.top = `${at.bottom - box.top + 4}px`;
  }

  close(): void {
    this.el.hidden = true;
  }
}
