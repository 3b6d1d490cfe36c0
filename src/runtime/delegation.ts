import type { ToolEffectInput, WaitAgentOutput } from '../../machines/tool-call.effects.js';
import type { AgentLink, SessionStorage } from '../../storage/session-storage.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { Warn } from '../protocol/log-fields.js';
import type { ToolResult } from '../protocol/tool-result.js';
import type { ChartClock } from './chart-clock.js';
import { EffectAborted } from './effect-aborted.js';
import type { EffectCancellation } from './effect-port.js';
import type { SessionHandle } from './session-handle.js';

/** What delegation needs from the runtime: making, opening and finding sessions. */
export interface DelegationHost {
  storage: SessionStorage;
  /** A new session of `agent`, linked to `link`, in the parent's permission mode and workspace; non-interactive. */
  createChild(parentSessionId: string, agent: string, link: AgentLink): Promise<SessionHandle>;
  /** The session's live handle, opening it from storage when it is not open here. */
  open(sessionId: string): Promise<SessionHandle>;
  /** The session's handle only when it is open here (the mailbox is memory only). */
  openHandle(sessionId: string): SessionHandle | undefined;
  clock: ChartClock;
  warn: Warn;
}

/** One child session as its parent sees it: the turn it runs now and how that turn ended. */
interface Child {
  id: string;
  agent: string;
  link: AgentLink;
  turnId: string;
  outcome: TurnOutcome | null;
  /** Settles with `outcome` once the current turn ends (the answer is in the parent's mailbox by then). */
  done: Promise<TurnOutcome>;
}

const result = (status: ToolResult['status'], content: string): ToolResult => ({ status, content });

/**
 * The sub-agents of every session of one runtime: who started whom, which turn each child runs,
 * and the work behind `spawn_agent`, `send_agent_message` and `wait_agent`. Children are sessions
 * like any other (their own actor, lease and rows); this registry is memory only, and a child a
 * restart forgot is found again through its stored link.
 */
export class Delegation {
  private readonly byParent = new Map<string, Map<string, Child>>();

  constructor(private readonly host: DelegationHost) {}

  /** Children started by this turn that still run: the bound `maxChildren` counts these. */
  liveChildren(parentSessionId: string, turnId: string): number {
    let live = 0;
    for (const child of this.byParent.get(parentSessionId)?.values() ?? []) if (child.link.turnId === turnId && child.outcome === null) live++;
    return live;
  }

  /** The children this session started that the registry knows (for inspection). */
  childIds(parentSessionId: string): string[] {
    return [...(this.byParent.get(parentSessionId)?.keys() ?? [])];
  }

  async spawn(input: ToolEffectInput): Promise<ToolResult> {
    const { agent, task } = input.args as { agent: string; task: string };
    const link: AgentLink = { sessionId: input.sessionId, turnId: input.turnId, toolCallId: input.toolCallId };
    const handle = await this.host.createChild(input.sessionId, agent, link);
    const started = await handle.startTurn({ clientRequestId: input.toolCallId, input: [{ type: 'text', text: task }], trigger: 'system' });
    if (!started.ok) return result('failed', `the sub-agent could not start its task: ${started.error.code}`);
    this.track({ id: handle.id, agent, link, turnId: started.turnId, outcome: null, done: Promise.resolve(null as never) }, handle);
    return result('succeeded', JSON.stringify({ agentId: handle.id, agent, status: 'running' }));
  }

  /** Into a running child's mailbox; a child that has answered takes the text as a new task (a new turn). */
  async send(input: ToolEffectInput): Promise<ToolResult> {
    const { agentId, text } = input.args as { agentId: string; text: string };
    const child = await this.childOf(input.sessionId, agentId);
    if (!child) return unknownChild(agentId);
    const handle = await this.host.open(child.id);
    if (child.outcome === null) {
      const delivered = await handle.deliverAgentMessage({ from: input.sessionId, text });
      if (!delivered.ok) return result('failed', `the message was not delivered: ${delivered.error.code}`);
      return result('succeeded', JSON.stringify({ agentId, status: 'running', delivered: 'mailbox' }));
    }
    const started = await handle.startTurn({ clientRequestId: input.toolCallId, input: [{ type: 'text', text }], trigger: 'system' });
    if (!started.ok) return result('failed', `the sub-agent could not take the message: ${started.error.code}`);
    child.link = { sessionId: input.sessionId, turnId: input.turnId, toolCallId: input.toolCallId };
    this.track({ ...child, turnId: started.turnId, outcome: null }, handle);
    return result('succeeded', JSON.stringify({ agentId, status: 'running', delivered: 'new_turn' }));
  }

  /** The child's answer, or a timeout on the chart clock (a `SimulatedClock` in tests); a cancel ends the wait at once. */
  async wait(input: ToolEffectInput, cancellation: EffectCancellation): Promise<WaitAgentOutput> {
    const { agentId, timeoutMs } = input.args as { agentId: string; timeoutMs: number };
    const child = await this.childOf(input.sessionId, agentId);
    if (!child) return { timedOut: false, result: unknownChild(agentId) };
    if (child.outcome) return { timedOut: false, result: answer(child, child.outcome) };
    if (cancellation.aborted) throw new EffectAborted('wait_agent');
    const { clock } = this.host;
    const signal = cancellation.signal;
    return new Promise<WaitAgentOutput>((resolve, reject) => {
      let settled = false;
      const finish = (settle: () => void) => {
        if (settled) return;
        settled = true;
        clock.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        settle();
      };
      const onAbort = () => finish(() => reject(new EffectAborted('wait_agent')));
      const timer = clock.setTimeout(
        () => finish(() => resolve({ timedOut: true, result: result('failed', `wait_agent timed out after ${timeoutMs} ms: sub-agent ${agentId} is still running`) })),
        timeoutMs,
      );
      signal.addEventListener('abort', onAbort, { once: true });
      void child.done.then((outcome) => finish(() => resolve({ timedOut: false, result: answer(child, outcome) })));
    });
  }

  /** The parent turn was cancelled, stopped or failed: its children still running are cancelled now. */
  cancelChildren(parentSessionId: string, turnId: string): void {
    for (const child of this.byParent.get(parentSessionId)?.values() ?? []) {
      if (child.link.turnId !== turnId || child.outcome !== null) continue;
      const handle = this.host.openHandle(child.id);
      if (!handle) continue;
      handle.cancelTurn(child.turnId).then(
        (cancelled) => {
          if (!cancelled.ok && cancelled.error.code !== 'TurnNotActive') this.host.warn(`could not cancel sub-agent ${child.id}: ${cancelled.error.code}`, { sessionId: child.id, turnId: child.turnId });
        },
        (error: unknown) => this.host.warn(`could not cancel sub-agent ${child.id}: ${String(error)}`, { sessionId: child.id, turnId: child.turnId }),
      );
    }
  }

  /** The parent left this runtime: what it started is found again through storage if it comes back. */
  forget(parentSessionId: string): void {
    this.byParent.delete(parentSessionId);
  }

  /** Registers the child's current turn; its end records the outcome and puts the answer in the parent's mailbox. */
  private track(child: Child, handle: SessionHandle): void {
    let children = this.byParent.get(child.link.sessionId);
    if (!children) this.byParent.set(child.link.sessionId, (children = new Map()));
    children.set(child.id, child);
    const turnId = child.turnId;
    child.done = handle.waitForTurn(turnId).then(async (ended) => {
      // A sub-agent's session resumes no turns, so it is never parked; a parent that is gets its child's end when it goes on.
      const outcome: TurnOutcome =
        ended.status !== 'unknown_turn' && ended.status !== 'parked' ? ended : { status: 'failed', code: 'actor_stopped', message: `the turn is ${ended.status === 'parked' ? 'parked' : 'unknown'}` };
      if (child.turnId === turnId) child.outcome = outcome;
      await this.deliver(child, outcome);
      return outcome;
    });
  }

  /** RT-4: the child's answer as an agent message, drained before the parent's next model call (or next user turn). */
  private async deliver(child: Child, outcome: TurnOutcome): Promise<void> {
    // A child cancelled with its parent's turn has nothing to tell.
    if (outcome.status === 'cancelled') return;
    const parent = this.host.openHandle(child.link.sessionId);
    if (!parent) return;
    const delivered = await parent.deliverAgentMessage({ from: child.id, text: messageText(child, outcome) });
    if (delivered.ok) return;
    const notice = `Sub-agent '${child.agent}' (${child.id}) ended ${outcome.status}; its answer is too long for a message (${delivered.error.code}): wait_agent returns it.`;
    const fallback = await parent.deliverAgentMessage({ from: child.id, text: notice });
    if (!fallback.ok) this.host.warn(`the answer of sub-agent ${child.id} could not be delivered: ${fallback.error.code}`, { sessionId: child.link.sessionId, turnId: child.link.turnId });
  }

  /** A child of this session: from the registry, or from its stored link (after a restart, or once the parent reopened). */
  private async childOf(parentSessionId: string, childId: string): Promise<Child | undefined> {
    const known = this.byParent.get(parentSessionId)?.get(childId);
    if (known) return known;
    const row = await this.host.storage.getSession(childId);
    if (row?.parent?.sessionId !== parentSessionId) return undefined;
    const turns = await this.host.storage.listTurns(childId);
    const last = turns.at(-1);
    if (!last) return undefined;
    const handle = await this.host.open(childId);
    const child: Child = { id: childId, agent: row.agent, link: row.parent, turnId: last.id, outcome: null, done: Promise.resolve(null as never) };
    this.track(child, handle);
    return child;
  }
}

function unknownChild(agentId: string): ToolResult {
  return result('failed', `UnknownAgentId: '${agentId}' is no sub-agent of this session`);
}

/** What `wait_agent` returns: the child's outcome as JSON the model can read. */
function answer(child: Child, outcome: TurnOutcome): ToolResult {
  const base = { agentId: child.id, agent: child.agent, status: outcome.status };
  if (outcome.status === 'completed') return result('succeeded', JSON.stringify({ ...base, answer: outcome.finalText }));
  if (outcome.status === 'failed') return result('succeeded', JSON.stringify({ ...base, code: outcome.code, message: outcome.message }));
  return result('succeeded', JSON.stringify(base));
}

function messageText(child: Child, outcome: TurnOutcome): string {
  const who = `Sub-agent '${child.agent}' (${child.id})`;
  if (outcome.status === 'completed') return `${who} answered:\n${outcome.finalText}`;
  if (outcome.status === 'failed') return `${who} failed (${outcome.code}): ${outcome.message}`;
  return `${who} ended ${outcome.status}.`;
}
