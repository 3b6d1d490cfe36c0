import type { FinishReason as UiFinishReason, UIMessageChunk } from 'ai';
import type { FinishReason } from '../protocol/model.js';
import type { TurnOutcome } from '../protocol/outcome.js';
import type { UpdateEnvelope } from '../protocol/updates.js';
import { approvalId } from './approval-id.js';
import type { RecordedCall, TurnRecordsView } from './turn-records.js';
import type { RuntimeView } from '../protocol/session-snapshot.js';

export type RunningView = Extract<RuntimeView, { kind: 'running' }>;

const FINISH_REASONS: Record<FinishReason, UiFinishReason> = {
  stop: 'stop',
  length: 'length',
  content_filter: 'content-filter',
  tool_calls: 'tool-calls',
  other: 'other',
};

/**
 * One turn as the AI SDK 6 UI message stream: the chunks one response of `POST /api/chat` carries,
 * folded by the client into one assistant message. Text and reasoning come from the update
 * envelopes; tool arguments and results, which envelopes do not carry, from the turn's stored
 * messages (`records`, refreshed by the caller before an envelope that names a tool call).
 *
 * A response ends at the turn's end (`finish`, `error` then `finish`, or `abort` for a cancel) or
 * at an approval request (`tool-approval-request`, then `finish` while the turn keeps waiting); the
 * client's answer arrives in the next request, whose response continues the same message.
 */
export class UiMessageTranslator {
  /** No chunk follows once the response has finished. */
  ended = false;
  private stepOpen = false;
  private textPart: string | null = null;
  private reasoningPart: string | null = null;
  private partCount = 0;
  private readonly announced = new Set<string>();
  private readonly answered = new Set<string>();

  constructor(
    private readonly turnId: string,
    private readonly records: TurnRecordsView,
  ) {}

  start(messageId: string): UIMessageChunk[] {
    return [{ type: 'start', messageId }];
  }

  /**
   * The client already holds everything stored so far (it is answering an approval): only what
   * happens from now on is sent. `pending` are the calls whose approval it answers.
   */
  continueAfter(pending: string[]): void {
    for (const step of this.records.steps()) {
      for (const call of step.calls) {
        if (!this.records.result(call.id)) continue;
        this.announced.add(call.id);
        this.answered.add(call.id);
      }
    }
    for (const id of pending) this.announced.add(id);
  }

  /**
   * The turn so far as one response would have streamed it, for a client that starts from nothing
   * (a resumed stream, a resubmitted message): its stored steps, then the model call under way
   * (`view`, the snapshot at the point the live envelopes continue from), then its end if it ended.
   */
  replay(view: RunningView | null, outcome: TurnOutcome | null): UIMessageChunk[] {
    const live = new Set(view?.toolCalls.map((call) => call.toolCallId));
    if (view?.pendingApproval) live.add(view.pendingApproval.toolCallId);
    const out: UIMessageChunk[] = [];
    for (const step of this.records.steps()) {
      out.push(...this.openStep());
      if (step.reasoning !== '') out.push(...this.closedPart('reasoning', step.reasoning));
      if (step.text !== '') out.push(...this.closedPart('text', step.text));
      for (const call of step.calls) {
        const result = this.records.result(call.id);
        if (!outcome && !result && !live.has(call.id)) continue;
        out.push(...this.announce(call.id, call));
        if (result) out.push(...this.output(call.id));
      }
    }
    if (view) out.push(...this.draft(view));
    if (outcome) out.push(...this.sweep(), ...this.finish(outcome));
    return out;
  }

  /** The chunks an update of this turn adds. */
  next(envelope: UpdateEnvelope): UIMessageChunk[] {
    if (this.ended) return [];
    const update = envelope.update;
    switch (update.type) {
      case 'phase_changed':
        return update.phase === 'running_model' ? this.openStep() : [];
      case 'text_delta':
        return update.text === '' ? [] : this.delta('text', update.text);
      case 'reasoning_delta':
        return update.text === '' ? [] : this.delta('reasoning', update.text);
      case 'draft_cleared':
        return this.closeParts();
      case 'tool_call_started':
        return this.announce(update.toolCallId, { id: update.toolCallId, name: update.name, input: null });
      case 'tool_call_finished':
        return [...this.announce(update.toolCallId, { id: update.toolCallId, name: 'unknown', input: null }), ...this.output(update.toolCallId)];
      case 'permission_requested':
        return this.approval(update.toolCallId, update.name);
      case 'permission_resolved':
        if (update.decision !== 'deny' || this.answered.has(update.toolCallId)) return [];
        this.answered.add(update.toolCallId);
        return [{ type: 'tool-output-denied', toolCallId: update.toolCallId }];
      case 'plan_updated':
        return [{ type: 'data-plan', id: 'plan', data: update.plan }];
      case 'turn_resumed':
        // The turn goes on under a new owner (issue 26): the model call the old one streamed died with
        // it, so its parts and step end here and the continuation's come as a step of their own. The
        // client is told in a transient data part (`onData`), which no message keeps.
        return [...this.closeStep(), { type: 'data-turn-resumed', data: { fromSequence: update.fromSequence, reason: update.reason }, transient: true }];
      case 'turn_finished':
        return [...this.sweep(), ...this.finish(update.outcome)];
      default:
        return [];
    }
  }

  /** The session closed under the stream without the turn's end reaching it. */
  interrupted(message: string): UIMessageChunk[] {
    if (this.ended) return [];
    this.ended = true;
    return [...this.closeStep(), { type: 'error', errorText: message }, { type: 'finish', finishReason: 'error' }];
  }

  private draft(view: RunningView): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    if (view.phase === 'running_model') {
      out.push(...this.openStep());
      if (view.draftReasoning !== '') out.push(...this.delta('reasoning', view.draftReasoning));
      if (view.draftText !== '') out.push(...this.delta('text', view.draftText));
    }
    if (view.pendingApproval) out.push(...this.approval(view.pendingApproval.toolCallId, view.pendingApproval.name));
    return out;
  }

  private approval(toolCallId: string, name: string): UIMessageChunk[] {
    const out = [...this.announce(toolCallId, { id: toolCallId, name, input: null }), ...this.closeParts()];
    out.push({ type: 'tool-approval-request', approvalId: approvalId(this.turnId, toolCallId), toolCallId });
    this.ended = true;
    return [...out, ...this.closeStep(), { type: 'finish', finishReason: 'tool-calls' }];
  }

  /** Calls the turn never started (it ended first): shown with the result the runtime stored for them. */
  private sweep(): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    for (const step of this.records.steps()) {
      for (const call of step.calls) out.push(...this.announce(call.id, call), ...this.output(call.id));
    }
    return out;
  }

  private finish(outcome: TurnOutcome): UIMessageChunk[] {
    this.ended = true;
    const out = this.closeParts();
    switch (outcome.status) {
      case 'completed':
        return [...out, ...this.closeStep(), { type: 'finish', finishReason: outcome.finishReason ? FINISH_REASONS[outcome.finishReason] : 'stop' }];
      case 'cancelled':
        return [...out, ...this.closeStep(), { type: 'abort', reason: 'cancelled' }];
      case 'failed':
        // The user's own denial is not an error to show: the denied tool part already says it.
        if (outcome.code === 'permission_denied') return [...out, ...this.closeStep(), { type: 'finish', finishReason: 'other' }];
        return [...out, ...this.closeStep(), { type: 'error', errorText: `${outcome.code}: ${outcome.message}` }, { type: 'finish', finishReason: 'error' }];
      case 'timed_out':
        return [...out, ...this.closeStep(), { type: 'error', errorText: `timed_out: ${outcome.message}` }, { type: 'finish', finishReason: 'error' }];
    }
  }

  private announce(toolCallId: string, fallback: RecordedCall): UIMessageChunk[] {
    if (this.announced.has(toolCallId)) return [];
    this.announced.add(toolCallId);
    const call = this.records.call(toolCallId) ?? fallback;
    return [...this.ensureStep(), { type: 'tool-input-available', toolCallId, toolName: call.name, input: call.input }];
  }

  private output(toolCallId: string): UIMessageChunk[] {
    const result = this.records.result(toolCallId);
    if (!result || this.answered.has(toolCallId)) return [];
    this.answered.add(toolCallId);
    if (result.status === 'succeeded') return [{ type: 'tool-output-available', toolCallId, output: result.content }];
    return [{ type: 'tool-output-error', toolCallId, errorText: result.content === '' ? result.status : result.content }];
  }

  private delta(kind: 'text' | 'reasoning', delta: string): UIMessageChunk[] {
    const out = this.ensureStep();
    const other = kind === 'text' ? this.reasoningPart : this.textPart;
    if (other !== null) out.push(this.endPart(kind === 'text' ? 'reasoning' : 'text'));
    let id = kind === 'text' ? this.textPart : this.reasoningPart;
    if (id === null) {
      id = `${kind}_${++this.partCount}`;
      if (kind === 'text') this.textPart = id;
      else this.reasoningPart = id;
      out.push({ type: `${kind}-start`, id });
    }
    out.push({ type: `${kind}-delta`, id, delta });
    return out;
  }

  private closedPart(kind: 'text' | 'reasoning', text: string): UIMessageChunk[] {
    return [...this.delta(kind, text), this.endPart(kind)];
  }

  private endPart(kind: 'text' | 'reasoning'): UIMessageChunk {
    const id = (kind === 'text' ? this.textPart : this.reasoningPart) ?? '';
    if (kind === 'text') this.textPart = null;
    else this.reasoningPart = null;
    return { type: `${kind}-end`, id };
  }

  private closeParts(): UIMessageChunk[] {
    const out: UIMessageChunk[] = [];
    if (this.reasoningPart !== null) out.push(this.endPart('reasoning'));
    if (this.textPart !== null) out.push(this.endPart('text'));
    return out;
  }

  /** Each model call is a step: the one before ends as the next begins. */
  private openStep(): UIMessageChunk[] {
    const out = [...this.closeParts(), ...this.closeStep()];
    this.stepOpen = true;
    return [...out, { type: 'start-step' }];
  }

  private ensureStep(): UIMessageChunk[] {
    return this.stepOpen ? [] : this.openStep();
  }

  private closeStep(): UIMessageChunk[] {
    if (!this.stepOpen) return [];
    this.stepOpen = false;
    return [...this.closeParts(), { type: 'finish-step' }];
  }
}
