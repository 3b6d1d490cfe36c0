import type { ChartLayout } from '../../src/inspect/chart-types.js';
import type { SessionListEntry, StreamHello, StreamItem } from '../../src/inspect/stream-protocol.js';
import { api, ApiError, openStream, setToken, takeTokenFromUrl } from './api.js';
import { ChartView } from './chart-view.js';
import { ControlsView } from './controls-view.js';
import { fill, h } from './dom.js';
import { NewSessionView } from './new-session-view.js';
import { SessionListView } from './session-list-view.js';
import { SessionModel } from './session-model.js';
import { TimelineView } from './timeline-view.js';
import './style.css';

takeTokenFromUrl();

const app = document.getElementById('app')!;
const connection = h('span', { class: 'connection', 'data-connected': 'false' }, 'connecting…');
/** The agents of sessions this page created, until the session list has them. */
const createdAgents = new Map<string, string>();
const newSession = new NewSessionView((id, agent) => {
  createdAgents.set(id, agent);
  select(id);
});
const list = new SessionListView((id) => select(id), () => schedule(), newSession.el);
const controls = new ControlsView();
const tree = h('ul', { class: 'actor-tree' });
/** Sub-agents: the session that spawned the selected one, and the sessions it spawned. */
const linksList = h('ul', { class: 'actor-tree session-links' });
const charts = h('div', { class: 'charts' });
const tabs = h('div', { class: 'chart-tabs', role: 'tablist' });
const followBox = h('input', { type: 'checkbox', checked: true, class: 'follow', onchange: () => schedule() });
let shownChart = 'session';
const detail = h('pre', { class: 'detail-text' }, 'Select a timeline entry to see the snapshot and context at that point.');
const timeline = new TimelineView((index) => showDetail(index));
const chartViews = new Map<string, ChartView>();

app.append(
  h('header', { class: 'top' }, h('strong', {}, 'turnchart'), h('span', { class: 'muted' }, ' inspector'), connection),
  h(
    'main',
    { class: 'layout' },
    list.el,
    h('div', { class: 'center' }, controls.el, h('section', { class: 'actors' }, h('header', {}, h('strong', {}, 'Actors')), tree, linksList), h('div', { class: 'chart-bar' }, tabs, h('label', { class: 'muted' }, followBox, ' follow the deepest live actor')), charts),
    h('div', { class: 'right' }, timeline.el, h('section', { class: 'detail-pane' }, h('header', {}, h('strong', {}, 'At this point')), detail)),
  ),
);

let model: SessionModel | null = null;
let stream: { close(): void; restart(): void } | null = null;
const drawn = { actors: -1, session: -1, items: -1, agent: null as string | null };
let frame = 0;

/** Redraws on the next animation frame at most once, however many messages arrived. */
function schedule(): void {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    render();
  });
}

function render(): void {
  list.render();
  if (!model) {
    controls.render(null);
    timeline.render();
    return;
  }
  const agent = list.agentOf(model.sessionId) ?? createdAgents.get(model.sessionId) ?? null;
  if (model.version.session !== drawn.session || agent !== drawn.agent) {
    drawn.session = model.version.session;
    drawn.agent = agent;
    controls.render(model.session, agent, model.progress, model.principal);
  }
  if (model.version.actors !== drawn.actors) {
    drawn.actors = model.version.actors;
    renderActors(model);
  }
  if (model.version.items !== drawn.items) {
    drawn.items = model.version.items;
    timeline.render();
  }
}

/**
 * One chart at a time, in tabs: following, the deepest live actor's (the tool call while one runs,
 * else the turn, else the session). The others stay in the page, hidden, with their highlights.
 */
/** The lifecycle charts follow goes through, deepest first; helper charts (the stall watchdog) are only shown when picked. */
const FOLLOWED = ['toolCall', 'turn'];

function showChart(machineId: string): void {
  shownChart = machineId;
  for (const [id, view] of chartViews) view.el.hidden = id !== machineId;
  for (const tab of tabs.children) tab.classList.toggle('selected', (tab as HTMLElement).dataset.tab === machineId);
}

function pickChart(m: SessionModel | null): void {
  if (!followBox.checked || !m) return showChart(shownChart);
  const deepest = FOLLOWED.find((id) => chartViews.has(id) && m.actorFor(id)?.live) ?? 'session';
  showChart(deepest);
}

function renderActors(m: SessionModel): void {
  pickChart(m);
  for (const [machineId, view] of chartViews) {
    const shown = m.actorFor(machineId);
    if (!shown?.view.state) {
      view.show([], [], false, 'no actor');
      continue;
    }
    const { info, state } = shown.view;
    view.show(state.states, shown.view.taken, shown.live, `${info.name} · ${info.actorId} · ${shown.live ? state.status : 'ended'}`);
  }
  const children = new Map<string | null, string[]>();
  for (const v of m.actors.values()) {
    if (!m.isLive(v.info.actorId)) continue;
    children.set(v.info.parentId, [...(children.get(v.info.parentId) ?? []), v.info.actorId]);
  }
  const node = (id: string): HTMLElement => {
    const v = m.actors.get(id)!;
    const leaves = (v.state?.states ?? []).filter((s, _, all) => !all.some((o) => o.startsWith(`${s}.`)));
    return h(
      'li',
      { 'data-actor': id, 'data-machine': v.info.machineId ?? '' },
      h(
        'a',
        {
          href: v.info.machineId ? `#chart-${v.info.machineId}` : undefined,
          onclick: (e) => {
            e.preventDefault();
            if (!v.info.machineId) return;
            followBox.checked = false;
            showChart(v.info.machineId);
          },
        },
        h('strong', {}, v.info.name),
        h('span', { class: 'muted' }, ` ${id}${v.info.machineId ? '' : ' (callback)'}`),
        leaves.length ? h('span', { class: 'leaf' }, ` ${leaves.map((s) => s.split('.').slice(1).join('.')).join(', ')}`) : null,
      ),
      (children.get(id) ?? []).length ? h('ul', {}, ...(children.get(id) ?? []).map(node)) : null,
    );
  };
  fill(tree, ...(children.get(null) ?? []).map(node));
}

interface SessionLinks {
  parent: { sessionId: string } | null;
  children: { sessionId: string; agent: string }[];
}

const LINKS_EVERY_MS = 1000;
const linksFetch = { last: 0, timer: 0 as ReturnType<typeof setTimeout> | 0 };

/** Fetches the selected session's links at most once a second; a call inside the second runs at its end. */
function refreshLinks(): void {
  if (linksFetch.timer) return;
  const wait = linksFetch.last + LINKS_EVERY_MS - Date.now();
  if (wait > 0) {
    linksFetch.timer = setTimeout(() => ((linksFetch.timer = 0), refreshLinks()), wait);
    return;
  }
  linksFetch.last = Date.now();
  const sessionId = model?.sessionId;
  if (!sessionId) return;
  api<SessionLinks>('GET', `/inspect/api/sessions/${encodeURIComponent(sessionId)}/links`).then(
    (links) => {
      if (model?.sessionId === sessionId) renderLinks(links);
    },
    () => undefined,
  );
}

/** A link that opens another session the way the session list does (`?session=<id>`). */
function sessionLink(sessionId: string, ...content: (string | HTMLElement)[]): HTMLElement {
  return h(
    'a',
    {
      href: `?session=${encodeURIComponent(sessionId)}`,
      onclick: (e) => {
        e.preventDefault();
        select(sessionId);
      },
    },
    ...content,
  );
}

function renderLinks(links: SessionLinks): void {
  fill(
    linksList,
    links.parent ? h('li', { 'data-parent-session': links.parent.sessionId }, sessionLink(links.parent.sessionId, h('strong', {}, 'parent session'), h('span', { class: 'muted' }, ` ${links.parent.sessionId}`))) : null,
    ...links.children.map((child) =>
      h('li', { 'data-child-session': child.sessionId }, sessionLink(child.sessionId, h('strong', {}, `sub-agent ${child.agent}`), h('span', { class: 'muted' }, ` · ${child.sessionId}`))),
    ),
  );
}

function showDetail(index: number): void {
  if (!model) return;
  const item = model.items[index];
  if (!item) return;
  const states = model.statesAt(index);
  const text = [
    `#${item.cursor} ${item.kind} at ${new Date(item.at).toISOString()}`,
    cap(JSON.stringify(item, null, 2)),
    '',
    states.length ? 'Actors as received up to here:' : 'No snapshot received before this entry.',
    ...states.map((s) => `\n${s.actor.name} (${s.actor.actorId}) ${s.status}\n  states: ${s.states.join(', ')}\n  context: ${cap(JSON.stringify(s.context, null, 2)).replace(/\n/g, '\n  ')}`),
  ].join('\n');
  detail.textContent = text;
}

function cap(text: string): string {
  return text.length > 20_000 ? `${text.slice(0, 20_000)}\n… (${text.length - 20_000} more characters)` : text;
}

function select(sessionId: string): void {
  if (model?.sessionId === sessionId) return;
  stream?.close();
  // A delta the page cannot apply (it missed a message): the stream starts again, with the whole picture.
  model = new SessionModel(sessionId, () => stream?.restart());
  const current = model;
  Object.assign(drawn, { actors: -1, session: -1, items: -1, agent: null });
  list.select(sessionId);
  timeline.setModel(current);
  fill(linksList);
  clearTimeout(linksFetch.timer || undefined);
  Object.assign(linksFetch, { last: 0, timer: 0 });
  refreshLinks();
  detail.textContent = 'Select a timeline entry to see the snapshot and context at that point.';
  const url = new URL(location.href);
  url.searchParams.set('session', sessionId);
  history.replaceState(null, '', url);
  void controls.refreshContext(sessionId);
  stream = openStream(`/inspect/api/sessions/${encodeURIComponent(sessionId)}/stream`, {
    message: (message) => {
      if (message.event === 'hello') current.hello(JSON.parse(message.data) as StreamHello);
      else {
        const item = JSON.parse(message.data) as StreamItem;
        current.add(item);
        if (item.kind === 'update' && item.envelope.update.type === 'turn_finished') void controls.refreshContext(sessionId);
        if (item.kind === 'update' && (item.envelope.update.type === 'turn_finished' || item.envelope.update.type === 'tool_call_finished')) refreshLinks();
      }
      schedule();
    },
    status: (connected, error) => {
      if (error?.status === 401) askForToken();
      else if (error) controls.render(null);
      setConnection(connected, error ? `${error.code}: ${error.message}` : undefined);
    },
  });
  schedule();
}

function setConnection(connected: boolean, message?: string): void {
  connection.dataset.connected = String(connected);
  connection.textContent = connected ? 'live' : (message ?? 'reconnecting…');
}

function askForToken(): void {
  if (document.querySelector('.token-form')) return;
  const input = h('input', { type: 'password', placeholder: 'bearer token', autocomplete: 'off' });
  const form = h(
    'form',
    {
      class: 'token-form card',
      onsubmit: (e) => {
        e.preventDefault();
        setToken(input.value);
        location.reload();
      },
    },
    h('p', {}, 'This host needs its token (the one given to ', h('code', {}, '--token'), ').'),
    input,
    h('button', { type: 'submit' }, 'Open'),
  );
  document.body.append(form);
}

async function start(): Promise<void> {
  try {
    const { charts: layouts } = await api<{ charts: ChartLayout[] }>('GET', '/inspect/api/charts');
    for (const layout of layouts) {
      const view = new ChartView(layout);
      chartViews.set(layout.machineId, view);
      charts.append(view.el);
      tabs.append(
        h('button', { class: 'tab', 'data-tab': layout.machineId, role: 'tab', onclick: () => ((followBox.checked = false), showChart(layout.machineId)) }, layout.machineId),
      );
    }
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return askForToken();
    setConnection(false, `cannot load the charts: ${String(error)}`);
  }
  try {
    await newSession.load();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return askForToken();
  }
  openStream('/inspect/api/sessions', {
    message: (message) => {
      if (message.event === 'list') list.replace((JSON.parse(message.data) as { sessions: SessionListEntry[] }).sessions);
      else list.update(JSON.parse(message.data) as SessionListEntry);
      schedule();
    },
    status: (connected, error) => {
      if (error?.status === 401) askForToken();
      if (!model) setConnection(connected, error?.message);
    },
  });
  showChart('session');
  const wanted = new URL(location.href).searchParams.get('session');
  if (wanted) select(wanted);
  schedule();
}

void start();
