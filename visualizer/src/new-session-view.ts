import { api, ApiError } from './api.js';
import { fill, h } from './dom.js';

/** One agent as `GET /agents` lists it. */
interface AgentEntry {
  name: string;
  description: string | null;
  model: string;
  tools: string[];
}

/** The agent a new session runs when none is picked: the host's default. */
const DEFAULT_AGENT = 'default';

/**
 * Starts a session: an agent select fed by `GET /agents` (its description under it and as the
 * option's tooltip) and a New session button, which sends `POST /sessions { agent }` and opens
 * the session it created.
 */
export class NewSessionView {
  readonly el: HTMLElement;
  private readonly select = h('select', { class: 'agent-select', 'data-testid': 'agent-select', title: 'the agent the new session runs' });
  private readonly about = h('div', { class: 'agent-about muted small' });
  private readonly notice = h('div', { class: 'notice', role: 'status' });
  private readonly button = h('button', { type: 'submit', class: 'new-session', 'data-action': 'new-session', disabled: true }, 'New session');
  private agents: AgentEntry[] = [];

  constructor(
    /** Opens the session just created. */
    private readonly opened: (sessionId: string, agent: string) => void,
  ) {
    this.select.addEventListener('change', () => this.describe());
    this.el = h(
      'form',
      {
        class: 'new-session-form',
        onsubmit: (e) => {
          e.preventDefault();
          void this.create();
        },
      },
      h('div', { class: 'new-session-row' }, h('label', { class: 'muted small' }, 'agent ', this.select), this.button),
      this.about,
      this.notice,
    );
  }

  /** Reads the host's agents; a host that lists none still offers its default. */
  async load(): Promise<void> {
    try {
      const { agents } = await api<{ agents: AgentEntry[] }>('GET', '/agents');
      this.agents = agents;
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) throw error;
      this.agents = [];
      fill(this.notice, h('span', { class: 'failure' }, `cannot list the agents: ${error instanceof Error ? error.message : String(error)}`));
    }
    const shown = this.agents.length ? this.agents : [{ name: DEFAULT_AGENT, description: null, model: '', tools: [] }];
    fill(
      this.select,
      ...shown.map((a) => h('option', { value: a.name, title: tooltip(a), selected: a.name === DEFAULT_AGENT }, a.name)),
    );
    if (!shown.some((a) => a.name === DEFAULT_AGENT)) this.select.selectedIndex = 0;
    this.button.disabled = false;
    this.describe();
  }

  private describe(): void {
    const agent = this.agents.find((a) => a.name === this.select.value);
    this.select.title = agent ? tooltip(agent) : 'the agent the new session runs';
    fill(
      this.about,
      agent?.description ?? null,
      agent ? h('span', { class: 'agent-meta' }, `${agent.description ? ' · ' : ''}${agent.model}${agent.tools.length ? ` · tools: ${agent.tools.join(', ')}` : ' · no tools'}`) : null,
    );
  }

  private async create(): Promise<void> {
    this.button.disabled = true;
    try {
      const agent = this.select.value;
      const created = await api<{ sessionId: string }>('POST', '/sessions', { agent });
      fill(this.notice);
      this.opened(created.sessionId, agent);
    } catch (error) {
      fill(this.notice, h('span', { class: 'failure' }, error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)));
    } finally {
      this.button.disabled = false;
    }
  }
}

function tooltip(agent: AgentEntry): string {
  return [agent.description ?? 'no description', agent.model && `model: ${agent.model}`, `tools: ${agent.tools.length ? agent.tools.join(', ') : 'none'}`].filter(Boolean).join('\n');
}
