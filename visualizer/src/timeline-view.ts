import { h } from './dom.js';
import type { SessionModel, TimelineItem } from './session-model.js';

const ROW = 22;
/** Rows drawn above and below the visible ones, so a fast scroll does not show blanks. */
const OVERSCAN = 10;
const KINDS = ['update', 'event', 'snapshot', 'actor'] as const;

/**
 * The merged stream as a list, virtualized: only the rows in view exist in the document (about
 * forty whatever the length), so a turn of ten thousand deltas scrolls as one of ten. It follows
 * the newest entry while scrolled to the bottom. Filters by kind and by type; a gap in the update
 * sequence is flagged on the entry after it.
 */
export class TimelineView {
  readonly el: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly rows: HTMLElement;
  private readonly count: HTMLElement;
  private readonly kinds = new Set<string>(KINDS);
  private text = '';
  /** Indices into `model.items` that pass the filter. */
  private shown: number[] = [];
  private indexedUpTo = 0;
  private indexedFirst: number | undefined;
  private follow = true;
  private selected: number | null = null;
  private model: SessionModel | null = null;
  private drawn = '';

  constructor(private readonly onSelect: (index: number) => void) {
    const boxes = KINDS.map((kind) =>
      h('label', { class: `kind ${kind}` }, h('input', { type: 'checkbox', checked: true, 'data-kind': kind, onchange: (e) => this.toggle(kind, (e.target as HTMLInputElement).checked) }), kind),
    );
    const search = h('input', { type: 'search', placeholder: 'type filter (e.g. text_delta, effect.)', class: 'type-filter', oninput: (e) => this.setText((e.target as HTMLInputElement).value) });
    this.count = h('span', { class: 'count' });
    this.spacer = h('div', { class: 'spacer' });
    this.rows = h('div', { class: 'rows' });
    this.scroller = h('div', { class: 'timeline-scroll', onscroll: () => this.onScroll() }, this.spacer, this.rows);
    this.el = h('section', { class: 'timeline' }, h('header', {}, h('strong', {}, 'Timeline'), this.count), h('div', { class: 'filters' }, ...boxes, search), this.scroller);
  }

  setModel(model: SessionModel | null): void {
    this.model = model;
    this.selected = null;
    this.follow = true;
    this.reindex();
  }

  private toggle(kind: string, on: boolean): void {
    if (on) this.kinds.add(kind);
    else this.kinds.delete(kind);
    this.reindex();
  }

  private setText(text: string): void {
    this.text = text.trim().toLowerCase();
    this.reindex();
  }

  private reindex(): void {
    this.shown = [];
    this.indexedUpTo = 0;
    this.indexedFirst = undefined;
    this.drawn = '';
    this.render();
  }

  private passes(item: TimelineItem): boolean {
    if (!this.kinds.has(item.kind)) return false;
    return this.text === '' || typeOf(item).toLowerCase().includes(this.text);
  }

  private onScroll(): void {
    const s = this.scroller;
    this.follow = s.scrollTop + s.clientHeight >= s.scrollHeight - ROW;
    this.render();
  }

  /** Brings the index up to date with the model (new items appended, old ones dropped) and draws the rows in view. */
  render(): void {
    const items = this.model?.items ?? [];
    if (items[0]?.cursor !== this.indexedFirst) {
      this.shown = [];
      this.indexedUpTo = 0;
      this.indexedFirst = items[0]?.cursor;
    }
    for (let i = this.indexedUpTo; i < items.length; i += 1) if (this.passes(items[i]!)) this.shown.push(i);
    this.indexedUpTo = items.length;
    this.count.textContent = `${this.shown.length.toLocaleString('en-US')} of ${items.length.toLocaleString('en-US')}`;
    this.spacer.style.height = `${this.shown.length * ROW}px`;
    if (this.follow) this.scroller.scrollTop = this.scroller.scrollHeight;
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(this.shown.length, Math.ceil((this.scroller.scrollTop + this.scroller.clientHeight) / ROW) + OVERSCAN);
    const key = `${first}:${last}:${this.shown.length}:${this.selected}`;
    if (key === this.drawn) return;
    this.drawn = key;
    const rows: HTMLElement[] = [];
    for (let r = first; r < last; r += 1) rows.push(this.row(this.shown[r]!, r));
    this.rows.replaceChildren(...rows);
  }

  private row(index: number, position: number): HTMLElement {
    const item = this.model!.items[index]!;
    const gap = item.kind === 'update' ? this.model!.gaps.get(item.cursor) : undefined;
    const el = h(
      'div',
      {
        class: `row ${item.kind}${gap ? ' gap' : ''}${index === this.selected ? ' selected' : ''}`,
        'data-cursor': item.cursor,
        'data-kind': item.kind,
        'data-gap': gap,
        style: `top:${position * ROW}px`,
        onclick: () => this.select(index),
      },
      h('span', { class: 'seq' }, item.kind === 'update' ? `#${item.envelope.sequence}` : `·${item.cursor}`),
      h('span', { class: 'type' }, typeOf(item)),
      h('span', { class: 'detail' }, gap ? `⚠ ${gap} update${gap === 1 ? '' : 's'} missing before this · ${detailOf(item, this.model!)}` : detailOf(item, this.model!)),
    );
    return el;
  }

  private select(index: number): void {
    this.selected = index;
    this.follow = false;
    this.drawn = '';
    this.render();
    this.onSelect(index);
  }
}

function typeOf(item: TimelineItem): string {
  switch (item.kind) {
    case 'update':
      return item.envelope.update.type;
    case 'event':
    case 'snapshot':
      return item.eventType;
    case 'actor':
      return 'actor';
  }
}

function actorName(model: SessionModel, actorId: string): string {
  const view = model.actors.get(actorId);
  return view ? `${view.info.name}` : actorId;
}

function detailOf(item: TimelineItem, model: SessionModel): string {
  switch (item.kind) {
    case 'update': {
      const u = item.envelope.update as Record<string, unknown> & { type: string };
      if (u.type === 'text_delta' || u.type === 'reasoning_delta') return JSON.stringify(u.text);
      if (u.type === 'phase_changed') return String(u.phase);
      if (u.type === 'turn_finished') return JSON.stringify(u.outcome);
      const { type: _type, ...rest } = u;
      return JSON.stringify(rest).slice(0, 200);
    }
    case 'event':
      return `${item.sourceId ? `${actorName(model, item.sourceId)} → ` : ''}${actorName(model, item.actorId)}`;
    case 'snapshot': {
      const leaves = item.state.states.filter((s) => !item.state.states.some((o) => o.startsWith(`${s}.`)));
      return `${actorName(model, item.actorId)}: ${leaves.join(', ')}${item.state.status === 'active' ? '' : ` (${item.state.status})`}`;
    }
    case 'actor':
      return `${item.actor.name}${item.actor.machineId ? ` (${item.actor.machineId})` : ''} ${item.actor.actorId}`;
  }
}
