import type { SessionListEntry } from '../../src/inspect/stream-protocol.js';
import { h } from './dom.js';

/** The session list: newest first, filterable by id, status, agent or owner, changing as sessions do. */
export class SessionListView {
  readonly el: HTMLElement;
  private readonly list = h('ul', { class: 'session-list' });
  private readonly entries = new Map<string, SessionListEntry>();
  private filter = '';
  private selected: string | null = null;
  dirty = false;

  constructor(
    private readonly onSelect: (sessionId: string) => void,
    /** Asks for a redraw (on the next animation frame). */
    private readonly changed: () => void,
    /** Shown above the filter (the new-session form). */
    top: HTMLElement | null = null,
  ) {
    const search = h('input', {
      type: 'search',
      placeholder: 'filter sessions',
      class: 'session-filter',
      oninput: (e) => {
        this.filter = (e.target as HTMLInputElement).value.trim().toLowerCase();
        this.dirty = true;
        this.changed();
      },
    });
    this.el = h('nav', { class: 'sessions' }, h('header', {}, h('strong', {}, 'Sessions')), top, search, this.list);
  }

  replace(entries: SessionListEntry[]): void {
    this.entries.clear();
    for (const e of entries) this.entries.set(e.sessionId, e);
    this.dirty = true;
  }

  update(entry: SessionListEntry): void {
    this.entries.set(entry.sessionId, entry);
    this.dirty = true;
  }

  /** The session's agent, once the list has the session. */
  agentOf(sessionId: string): string | null {
    return this.entries.get(sessionId)?.agent ?? null;
  }

  select(sessionId: string | null): void {
    this.selected = sessionId;
    this.dirty = true;
  }

  render(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const shown = [...this.entries.values()]
      .filter((e) => this.filter === '' || `${e.sessionId} ${e.status} ${e.lastOutcome ?? ''} ${e.agent} ${e.principal ?? ''}`.toLowerCase().includes(this.filter))
      .sort((a, b) => b.createdAtMs - a.createdAtMs);
    this.list.replaceChildren(
      ...shown.map((e) =>
        h(
          'li',
          { class: e.sessionId === this.selected ? 'selected' : '', 'data-session': e.sessionId, 'data-status': e.status, onclick: () => this.onSelect(e.sessionId) },
          // The id's tail: ids begin with their creation time (version 7 UUIDs), so their heads look alike.
          h('code', {}, e.sessionId.slice(-12)),
          h('span', { class: `pill ${e.status}` }, e.status),
          e.lastOutcome && e.status === 'idle' ? h('span', { class: `pill outcome ${e.lastOutcome}` }, e.lastOutcome) : null,
          // Issue 25: whose session it is; a session stored before principals shows none.
          e.principal !== null ? h('span', { class: 'pill owner', 'data-owner': e.principal, title: 'the principal that owns this session' }, `owner: ${e.principal}`) : null,
          h('span', { class: 'muted small' }, `${e.agent} · ${new Date(e.createdAtMs).toLocaleTimeString()}${e.open ? '' : ' · closed'}`),
        ),
      ),
    );
    if (shown.length === 0) this.list.append(h('li', { class: 'muted' }, this.entries.size ? 'no session matches' : 'no sessions yet'));
  }
}
