import type { Plan } from '../protocol/plan.js';
import type { LiveToolCallStatus, QueuedTurnView, UpdateEnvelope } from '../protocol/updates.js';
import type { TokenUsage } from '../protocol/usage.js';
import type { PendingApproval, RuntimeView } from '../protocol/session-snapshot.js';

/**
 * The in-memory picture a reconnecting UI reads (RT-21), folded from the same updates the
 * stream carries, so snapshot and stream cannot disagree. Progress is not folded in.
 */
export class LiveView {
  runtime: RuntimeView = { kind: 'idle' };
  plan: Plan | null = null;
  /** Turns waiting behind the running one (RL-2). */
  queue: QueuedTurnView[];

  constructor(plan: Plan | null = null, queue: QueuedTurnView[] = []) {
    this.plan = plan;
    this.queue = queue;
  }

  fold(envelope: UpdateEnvelope): void {
    const update = envelope.update;
    if (update.type === 'queue_updated') {
      this.queue = update.queue;
      return;
    }
    // Issue 26: a resumed turn is live again from its first update here on; its earlier calls are in the conversation.
    if (update.type === 'turn_started' || update.type === 'turn_resumed') {
      this.runtime = {
        kind: 'running',
        turnId: envelope.turnId,
        clientRequestId: update.clientRequestId,
        phase: 'starting',
        draftText: '',
        draftReasoning: '',
        toolCalls: [],
        pendingApproval: null,
        plan: this.plan,
      };
      return;
    }
    if (update.type === 'plan_updated') this.plan = update.plan;
    if (update.type === 'turn_finished') {
      this.runtime = { kind: 'terminal', turnId: envelope.turnId, outcome: update.outcome, plan: this.plan };
      return;
    }
    const run = this.runtime;
    if (run.kind !== 'running') return;
    switch (update.type) {
      case 'phase_changed':
        run.phase = update.phase;
        break;
      case 'text_delta':
        run.draftText += update.text;
        break;
      case 'reasoning_delta':
        run.draftReasoning += update.text;
        break;
      case 'draft_cleared':
        run.draftText = '';
        run.draftReasoning = '';
        break;
      case 'tool_call_started': {
        // A resumed turn's awaited call is shown from the opening on (`awaitApproval`); it starts again here.
        const shown = run.toolCalls.find((c) => c.toolCallId === update.toolCallId);
        if (shown) shown.status = update.status;
        else run.toolCalls.push({ toolCallId: update.toolCallId, name: update.name, status: update.status });
        break;
      }
      case 'tool_call_finished':
        this.setToolStatus(update.toolCallId, update.status);
        break;
      case 'permission_requested':
        run.pendingApproval = { toolCallId: update.toolCallId, name: update.name, paths: update.paths };
        break;
      case 'permission_resolved':
        run.pendingApproval = null;
        break;
      case 'plan_updated':
        run.plan = update.plan;
        break;
    }
  }

  /** The running turn's usage so far: it has no update of its own (the outcome carries the total). */
  setUsage(turnId: string, usage: TokenUsage): void {
    if (this.runtime.kind === 'running' && this.runtime.turnId === turnId) this.runtime.usage = usage;
  }

  /**
   * Issue 26: a resumed turn waits for this approval, stored before its host went away. The snapshot
   * shows it pending from the opening on, not only once the call has asked again a few steps later.
   */
  awaitApproval(turnId: string, approval: PendingApproval): void {
    const run = this.runtime;
    if (run.kind !== 'running' || run.turnId !== turnId) return;
    run.phase = 'waiting_permission';
    run.pendingApproval = approval;
    if (!run.toolCalls.some((c) => c.toolCallId === approval.toolCallId)) run.toolCalls.push({ toolCallId: approval.toolCallId, name: approval.name, status: 'waiting_permission' });
  }

  /** Status changes that have no update of their own (e.g. approved → running). */
  setToolStatus(toolCallId: string, status: LiveToolCallStatus): void {
    if (this.runtime.kind !== 'running') return;
    const call = this.runtime.toolCalls.find((c) => c.toolCallId === toolCallId);
    if (call) call.status = status;
  }
}
