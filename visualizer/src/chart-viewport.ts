/** A rectangle in the chart's coordinates. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * The scale the chart is read at: its labels are drawn at 11 px or more (style.css), so 1:1 keeps
 * every label at least 11 CSS px high. A chart is wider than the panel at this scale; the view shows
 * the part around the active state, and "fit" shrinks the whole chart into the panel instead.
 */
export const READABLE_SCALE = 1;
const MARGIN = 24;
const MIN_SCALE = 0.05;
const MAX_SCALE = 3;

/**
 * Which part of a chart the panel shows, as the SVG's `viewBox`: the SVG fills a fixed-size panel
 * and the view box decides scale and position, so zooming, panning and following the active state
 * are one rectangle, and the page's scale is `panel width / view width` (what `getScreenCTM` reads).
 */
export class Viewport {
  private view: Box = { x: 0, y: 0, width: 1, height: 1 };
  private chart: Box = { x: 0, y: 0, width: 1, height: 1 };

  constructor(private readonly svgEl: SVGSVGElement) {
    svgEl.setAttribute('preserveAspectRatio', 'xMidYMid meet');
  }

  /** The panel's size in CSS pixels; zero while the panel is hidden. */
  private size(): { width: number; height: number } {
    return { width: this.svgEl.clientWidth, height: this.svgEl.clientHeight };
  }

  get visible(): boolean {
    const { width, height } = this.size();
    return width > 0 && height > 0;
  }

  /** CSS pixels per chart unit. */
  get scale(): number {
    const { width, height } = this.size();
    return Math.min(width / this.view.width, height / this.view.height);
  }

  setChart(chart: Box): void {
    this.chart = chart;
  }

  /** The whole chart, as large as the panel allows. */
  fit(): void {
    this.set({ x: this.chart.x - MARGIN / 2, y: this.chart.y - MARGIN / 2, width: this.chart.width + MARGIN, height: this.chart.height + MARGIN });
  }

  /**
   * The view at `scale` around `focus`: centred on it when it fits, else from its top-left corner,
   * kept over the chart (no blank beyond an edge the panel could fill with chart).
   */
  showAround(focus: Box, scale: number): void {
    const { width, height } = this.size();
    const w = width / scale;
    const h = height / scale;
    const x = focus.width + 2 * MARGIN <= w ? focus.x + focus.width / 2 - w / 2 : focus.x - MARGIN;
    const y = focus.height + 2 * MARGIN <= h ? focus.y + focus.height / 2 - h / 2 : focus.y - MARGIN;
    this.set(this.clamped({ x, y, width: w, height: h }));
  }

  /** How much of the chart the panel holds at `scale`, margins kept. */
  room(scale: number): { width: number; height: number } {
    const { width, height } = this.size();
    return { width: width / scale - 2 * MARGIN, height: height / scale - 2 * MARGIN };
  }

  /** Whether a box is wholly in view. */
  contains(box: Box): boolean {
    const v = this.shown();
    return box.x >= v.x && box.y >= v.y && box.x + box.width <= v.x + v.width && box.y + box.height <= v.y + v.height;
  }

  /** Moves the view by a drag of (dx, dy) CSS pixels. */
  panBy(dx: number, dy: number): void {
    const s = this.scale;
    this.set(this.clamped({ ...this.view, x: this.view.x - dx / s, y: this.view.y - dy / s }));
  }

  /** Zooms to `scale`, keeping the chart point under the panel point (px, py) in place (the centre by default). */
  zoomTo(scale: number, px?: number, py?: number): void {
    const { width, height } = this.size();
    const s = Math.min(MAX_SCALE, Math.max(MIN_SCALE, scale));
    const old = this.scale;
    const v = this.shown();
    const ax = px ?? width / 2;
    const ay = py ?? height / 2;
    const cx = v.x + ax / old;
    const cy = v.y + ay / old;
    this.set(this.clamped({ x: cx - ax / s, y: cy - ay / s, width: width / s, height: height / s }));
  }

  /** The part of the chart the panel shows: the view box widened by `meet` to the panel's shape. */
  private shown(): Box {
    const { width, height } = this.size();
    const s = this.scale;
    const w = width / s;
    const h = height / s;
    return { x: this.view.x - (w - this.view.width) / 2, y: this.view.y - (h - this.view.height) / 2, width: w, height: h };
  }

  private clamped(v: Box): Box {
    const axis = (start: number, length: number, min: number, extent: number): number => {
      const lo = min - MARGIN;
      const hi = min + extent + MARGIN;
      if (length >= hi - lo) return lo - (length - (hi - lo)) / 2;
      return Math.min(Math.max(start, lo), hi - length);
    };
    return { ...v, x: axis(v.x, v.width, this.chart.x, this.chart.width), y: axis(v.y, v.height, this.chart.y, this.chart.height) };
  }

  private set(v: Box): void {
    if (!(v.width > 0 && v.height > 0)) return;
    this.view = v;
    this.svgEl.setAttribute('viewBox', `${v.x.toFixed(1)} ${v.y.toFixed(1)} ${v.width.toFixed(1)} ${v.height.toFixed(1)}`);
  }
}
