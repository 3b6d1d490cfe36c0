import type { InspectedSession } from '../../src/inspect/stream-protocol.js';
import { api, ApiError } from './api.js';
import { fill, h } from './dom.js';
import { messageOf } from '../../src/protocol/error-message.js';

/** `GET /sessions/:id/context`, the part the bar draws. */
interface ContextPreview {
  budget: { systemContextTokens: number; conversationTokens: number; toolSurfaceTokens: number; estimatedInputTokens: number; reservedOutputTokens: number };
  autoCompactTokenLimit: number;
  percentUsed: number;
}

/**
 * What a person does and reads about the running turn: its status, the Cancel turn button, each
 * pending approval as a card with Allow once / Deny, the plan, and the context window bar. The
 * buttons call the API; what they change comes back through the stream.
 */
export class ControlsView {
  readonly el: HTMLElement;
  private readonly status = h('div', { class: 'status-line' });
  private readonly approvals = h('div', { class: 'approvals' });
  private readonly toolCalls = h('div', { class: 'tool-calls' });
  private readonly plan = h('div', { class: 'plan' });
  private readonly context = h('div', { class: 'context' });
  private readonly notice = h('div', { class: 'notice', role: 'status' });
  private session: InspectedSession | null = null;

  constructor() {
    this.el = h('section', { class: 'controls' }, this.status, this.notice, this.approvals, this.toolCalls, this.plan, this.context);
  }

  /**
   * `agent`: the session's agent, as the session list has it (null until known); `progress`: the
   * latest progress of each running tool call, by tool call id; `owner`: the principal that owns
   * the session (issue 25), shown when it has one.
   */
  render(session: InspectedSession | null, agent: string | null = null, progress: ReadonlyMap<string, string> = new Map(), owner: string | null = null): void {
    this.session = session;
    if (!session) {
      fill(this.status, h('span', { class: 'muted' }, 'Select a session on the left.'));
      fill(this.approvals);
      fill(this.toolCalls);
      fill(this.plan);
      return;
    }
    const rt = session.runtime;
    const phase = rt.kind === 'running' ? rt.phase : rt.kind === 'terminal' ? rt.outcome.status : 'idle';
    const cancel = h('button', { class: 'cancel', 'data-action': 'cancel-turn', disabled: rt.kind !== 'running', onclick: () => void this.cancel() }, 'Cancel turn');
    fill(
      this.status,
      h('code', { class: 'session-id' }, session.sessionId),
      h('span', { class: 'pill agent', 'data-agent': agent ?? '', title: 'the agent this session runs' }, `agent ${agent ?? '…'}`),
      owner !== null ? h('span', { class: 'pill owner', 'data-owner': owner, title: 'the principal that owns this session' }, `owner: ${owner}`) : null,
      h('span', { class: `pill ${phase}`, 'data-phase': phase }, phase),
      h('span', { class: 'muted' }, `mode ${session.permissionMode} · ${session.busyPolicy} · #${session.lastUpdateSequence}${session.queue.length ? ` · ${session.queue.length} queued` : ''}`),
      rt.kind === 'terminal' && rt.outcome.status === 'failed' ? h('span', { class: 'failure' }, `${rt.outcome.code}: ${rt.outcome.message}`) : null,
      cancel,
    );
    const pending = rt.kind === 'running' ? rt.pendingApproval : null;
    fill(
      this.approvals,
      pending &&
        h(
          'div',
          { class: 'approval card', 'data-tool-call': pending.toolCallId },
          h('div', {}, h('strong', {}, pending.name), ' asks for approval'),
          pending.paths.length ? h('ul', {}, ...pending.paths.map((p) => h('li', {}, h('code', {}, p)))) : null,
          h(
            'div',
            { class: 'buttons' },
            h('button', { class: 'allow', 'data-action': 'allow-once', onclick: () => void this.resolve(pending.toolCallId, 'allow_once') }, 'Allow once'),
            h('button', { class: 'deny', 'data-action': 'deny', onclick: () => void this.resolve(pending.toolCallId, 'deny') }, 'Deny'),
          ),
        ),
    );
    const calls = rt.kind === 'running' ? rt.toolCalls : [];
    fill(
      this.toolCalls,
      calls.length > 0 &&
        h(
          'div',
          { class: 'card tool-call-card' },
          h('strong', {}, 'Tool calls'),
          h(
            'ul',
            {},
            ...calls.map((call) => {
              const said = progress.get(call.toolCallId);
              return h(
                'li',
                { 'data-tool-call': call.toolCallId, 'data-status': call.status },
                h('code', {}, call.name),
                ' ',
                h('span', { class: `pill ${call.status}` }, call.status),
                said !== undefined ? h('span', { class: 'progress', 'data-progress': said }, ` ${said}`) : null,
              );
            }),
          ),
        ),
    );
    const plan = rt.kind === 'idle' ? null : rt.plan;
    fill(
      this.plan,
      plan &&
        h(
          'div',
          { class: 'card' },
          h('strong', {}, 'Plan'),
          plan.explanation ? h('p', {}, plan.explanation) : null,
          h('ol', {}, ...plan.plan.map((s) => h('li', { class: s.status }, s.step))),
        ),
    );
  }

  /** Reads the context window again (on opening a session and after each turn). */
  async refreshContext(sessionId: string): Promise<void> {
    try {
      const preview = await api<ContextPreview>('GET', `/sessions/${encodeURIComponent(sessionId)}/context`);
      fill(this.context, contextBar(preview));
    } catch (error) {
      fill(this.context, h('span', { class: 'muted' }, `context window unavailable: ${messageOf(error)}`));
    }
  }

  private async cancel(): Promise<void> {
    const s = this.session;
    if (s?.runtime.kind !== 'running') return;
    await this.call(`/sessions/${encodeURIComponent(s.sessionId)}/turns/${encodeURIComponent(s.runtime.turnId)}/cancel`, undefined);
  }

  private async resolve(toolCallId: string, decision: 'allow_once' | 'deny'): Promise<void> {
    const s = this.session;
    if (s?.runtime.kind !== 'running') return;
    for (const button of this.approvals.querySelectorAll('button')) button.disabled = true;
    await this.call(`/sessions/${encodeURIComponent(s.sessionId)}/turns/${encodeURIComponent(s.runtime.turnId)}/permissions/${encodeURIComponent(toolCallId)}`, { decision });
  }

  private async call(path: string, body: unknown): Promise<void> {
    try {
      await api('POST', path, body);
      fill(this.notice);
    } catch (error) {
      fill(this.notice, h('span', { class: 'failure' }, error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)));
    }
  }
}

/**
 * The window as a bar: system, conversation and tools (the estimated input), the output reserved
 * for the answer, and the auto-compact line. The API does not report the window itself: it is the
 * auto-compact line (85 % of the usable input) worked back, plus the reserved output.
 */
function contextBar(preview: ContextPreview): HTMLElement {
  const b = preview.budget;
  const line = preview.autoCompactTokenLimit;
  const window = Math.max(1, Math.round(line / 0.85) + b.reservedOutputTokens);
  const pct = (n: number) => `${Math.max(0, (n / window) * 100).toFixed(2)}%`;
  const n = (v: number) => v.toLocaleString('en-US');
  const parts: [string, number][] = [
    ['system', b.systemContextTokens],
    ['conversation', b.conversationTokens],
    ['tools', b.toolSurfaceTokens],
    ['reserved', b.reservedOutputTokens],
  ];
  return h(
    'div',
    { class: 'card context-card' },
    h('strong', {}, 'Context window'),
    h('span', { class: 'muted' }, ` ${preview.percentUsed}% of the auto-compact line`),
    h(
      'div',
      { class: 'bar', 'data-window': window, title: `≈ ${n(window)}-token window` },
      ...parts.map(([name, tokens]) => h('span', { class: `seg ${name}`, style: `width:${pct(tokens)}`, title: `${name} ${n(tokens)}` })),
      h('span', { class: 'line', style: `left:${pct(line)}`, title: `auto-compact at ${n(line)}` }),
    ),
    h(
      'div',
      { class: 'legend' },
      ...parts.map(([name, tokens]) => h('span', { class: `key ${name}` }, `${name} ${n(tokens)}`)),
      h('span', { class: 'key line' }, `auto-compact ${n(line)} of ≈ ${n(window)}`),
    ),
  );
}
