import type { ELK } from 'elkjs/lib/elk-api.js';
import { layoutGraph } from '../../src/inspect/chart-elk.js';
import type { ChartGraph, ChartLayout } from '../../src/inspect/chart-types.js';
import { foldGraph } from './chart-collapse.js';

let elk: Promise<ELK> | null = null;

/**
 * ELK, fetched the first time a chart is folded (a chunk of its own, about 1.5 MB): the charts as
 * defined come laid out from the host, and a page that never folds one never loads it. elkjs is
 * CommonJS; its constructor is the module's default export, however the bundler wraps it.
 */
function loadElk(): Promise<ELK> {
  elk ??= import('elkjs/lib/elk.bundled.js').then((module: { default?: unknown }) => {
    const Elk = ((module.default as { default?: unknown } | undefined)?.default ?? module.default ?? module) as new () => ELK;
    return new Elk();
  });
  elk.catch(() => (elk = null));
  return elk;
}

/**
 * A chart's layouts by the set of states folded in it, each laid out once: the active state moves
 * between a few compound states, so a page lays out each folding once and then switches at once.
 */
export class LayoutCache {
  private readonly layouts = new Map<string, Promise<ChartLayout>>();
  private readonly ready = new Map<string, ChartLayout>();

  constructor(
    private readonly graph: ChartGraph,
    full: ChartLayout,
  ) {
    this.ready.set('', full);
  }

  static key(folded: ReadonlySet<string>): string {
    return [...folded].sort().join(',');
  }

  /** The layout at once when it is known, else when ELK has made it. */
  get(folded: ReadonlySet<string>): ChartLayout | Promise<ChartLayout> {
    const key = LayoutCache.key(folded);
    const done = this.ready.get(key);
    if (done) return done;
    let pending = this.layouts.get(key);
    if (!pending) {
      pending = loadElk().then((e) => layoutGraph(e, foldGraph(this.graph, folded)));
      this.layouts.set(key, pending);
      pending.then(
        (layout) => this.ready.set(key, layout),
        () => this.layouts.delete(key),
      );
    }
    return pending;
  }
}
